"""The claim's candidates by the ORM, for a backend without a hand-written claim of its own
(PostgreSQL, MySQL and MariaDB, and SQLite have theirs): the due instances no lease holds, then
those whose lease lapsed, each from its own index.

A due instance that a live lease holds is not in the claim index's range (dw_instance_due is
partial, `lease_until IS NULL`, where the database has partial indexes; MySQL and MariaDB have
lease_until after the priority in it), so a claim reads two ranges and merges them: the free
instances in claim order, and the few whose lease lapsed (from dw_instance_leased, sorted).
A scan of one range with `lease_until IS NULL OR lease_until < now` would read every instance
that runs before the first free one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet

from ..models import WorkflowInstance
from .backends import backend

# The claim order, which the partial claim index holds (without lease_until, NULL throughout
# its rows: indexes.DueIndex), so that the database reads the free range in index order.
ORDER = ("priority", "wake_at", "created_at", "id")


def free(now: datetime) -> Q:
    """Due, no lease holds it, and not parked (store/parking.py)."""
    return Q(wake_at__lte=now, lease_until__isnull=True, parked=False)


def lapsed(now: datetime) -> Q:
    """Due, and its lease lapsed (a claim also needs backend.lapsed_lease_free)."""
    return Q(wake_at__lte=now, lease_until__lt=now)


def candidates(
    using: str,
    rows: QuerySet[WorkflowInstance],
    *,
    now: datetime,
    limit: int,
    fields: tuple[str, ...],
    lock: bool,
) -> list[tuple[Any, ...]]:
    """Up to `limit` due instances of `rows` (filtered by workflow, queue and limits), as
    `fields` (the first of them "id"), in claim order. With `lock` (in a transaction), locked
    FOR UPDATE SKIP LOCKED. A lapsed lease whose renewal waits for the row (lapsed_lease_free)
    is left out after the lapsed range is read, so that its try-lock runs for `limit` rows at
    most, never for every lapsed lease."""
    if lock:
        rows = rows.select_for_update(skip_locked=True)
    columns = (*fields, *ORDER)
    found = list(rows.filter(free(now)).order_by(*ORDER).values_list(*columns)[:limit])
    # Most claims find no lapsed lease: a look at dw_instance_leased first spares them the
    # second scan's statement (under limits, one with every full key in it).
    late: list[tuple[Any, ...]] = []
    if WorkflowInstance.objects.using(using).filter(lapsed(now)).exists():
        late = list(rows.filter(lapsed(now)).order_by(*ORDER).values_list(*columns)[:limit])
    if late and backend(using).has_advisory_locks:
        takeable = set(
            WorkflowInstance.objects.using(using)
            .filter(backend(using).lapsed_lease_free(), pk__in=[row[0] for row in late])
            .values_list("id", flat=True)
        )
        late = [row for row in late if row[0] in takeable]
    merged = sorted(found + late, key=lambda row: row[len(fields) :])
    return [row[: len(fields)] for row in merged[:limit]]
