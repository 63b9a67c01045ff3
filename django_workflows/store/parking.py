"""Parked instances: due instances whose concurrency key had every slot taken when a claim
passed over them, kept out of the claim index's range until a lease of that key ends.

Without parking, a claim under a key's limit reads every due instance of every full key before
the first one it may lease (10,000 keys at their limit with five due instances each: 50,000 rows
read and dropped per claim). A parked instance is still due (its status, wake time and place in
the claim order are unchanged): only the claim index leaves it out.

The rule that keeps a parked instance from waiting for nothing: **an instance is parked only
while its claim holds the row locks of its key's live leases**, every slot's. The lease holder's
release updates its row, so it waits for the claim to commit, and then, in the release's own
transaction, puts back the parked instances of its key (Backend.unpark_key), which it now
sees. (A put-back that comes when none was due only costs a claim the parking again: MySQL's batched
write sends it whether or not it still holds the lease.) A release that holds its row first is skipped (SKIP LOCKED) by the claim, whose key then does
not count as full for parking. A lease that lapses without a release holds no slot: claims
under limits put back the parked instances of the keys whose lease lapsed (`unpark_lapsed`, at
most once a second per process).
"""

from __future__ import annotations

import functools
import operator
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

from django.db import connections, transaction
from django.db.models import Q

from ..models import WorkflowInstance
from .backends import backend


class Keyed(Protocol):
    """A due instance as a claim's scan returns it (limits.Candidate)."""

    @property
    def id(self) -> str: ...
    @property
    def workflow(self) -> str: ...
    @property
    def concurrency_key(self) -> str | None: ...


def _of_keys(keys: Iterable[tuple[str, str]]) -> Q:
    """The rows of these (workflow, key) pairs, one IN list per workflow."""
    by_workflow: dict[str, set[str]] = {}
    for workflow, key in keys:
        by_workflow.setdefault(workflow, set()).add(key)
    return functools.reduce(
        operator.or_,
        (Q(workflow=w, concurrency_key__in=sorted(k)) for w, k in sorted(by_workflow.items())),
    )


def parked_by(instance: WorkflowInstance) -> tuple[str, str] | None:
    """The (workflow, key) whose parked instances a release of `instance` puts back: its
    concurrency key's, None without one (InstanceWrite.unpark)."""
    if instance.concurrency_key is None:
        return None
    return instance.workflow, instance.concurrency_key


def full_key_sql(per_key: dict[str, int], now: datetime, adapt: Any) -> tuple[str, list[Any]]:
    """Whether the row's concurrency key (an instance's, of the instance table unaliased) has
    every slot taken by a live lease as of `now`, as a boolean SQL expression and its
    parameters: the per_key-th live lease of its key, a probe of dw_instance_live_key. (The
    key IS NOT NULL lets PostgreSQL read that partial index.) `adapt`: the connection's
    adapt_datetimefield_value."""
    table = WorkflowInstance._meta.db_table
    parts: list[str] = []
    params: list[Any] = []
    for workflow, slots in sorted(per_key.items()):
        # The LIMIT also keeps PostgreSQL from reading every live lease of the workflow into a
        # hash first (a hashed subplan), which its estimate of the scan's rows (before its
        # LIMIT) makes look cheaper than a probe per row.
        offset = f" LIMIT 1 OFFSET {int(slots) - 1}"
        parts.append(
            f"(workflow = %s AND EXISTS (SELECT 1 FROM {table} AS held "
            f"WHERE held.workflow = %s AND held.concurrency_key IS NOT NULL "
            f"AND held.concurrency_key = {table}.concurrency_key "
            f"AND held.lease_until >= %s{offset}))"
        )
        params += [workflow, workflow, adapt(now)]
    return f"({' OR '.join(parts)})", params


def park(using: str, now: datetime, rows: Sequence[Keyed], per_key: dict[str, int]) -> int:
    """Inside a claim's transaction, under its concurrency locks: park the instances of `rows`
    (passed over: their keys were full) that no lease holds, where this transaction can lock
    the row of every live lease that fills their key. Returns how many it parked."""
    keys = {(r.workflow, r.concurrency_key) for r in rows if r.concurrency_key is not None}
    if not keys:
        return 0
    # Lock the live leases' rows, skipping those another transaction holds (a release in
    # flight, an atomic step): a key is parked only with every slot's lease locked here.
    holders = WorkflowInstance.objects.using(using).filter(_of_keys(keys), lease_until__gte=now)
    if backend(using).has_skip_locked:
        holders = holders.select_for_update(skip_locked=True)
    locked = Counter(holders.values_list("workflow", "concurrency_key"))
    held = {key for key in keys if locked[key] >= per_key[key[0]]}
    ids = sorted(r.id for r in rows if (r.workflow, r.concurrency_key) in held)
    if not ids:
        return 0
    rows_to_park = WorkflowInstance.objects.using(using).filter(
        pk__in=ids, lease_until__isnull=True, parked=False
    )
    return rows_to_park.update(parked=True)


# A claim looks for lapsed leases' keys at most once a second per process and database: a
# statement per claim cost MariaDB's server more than a limited drain's parking saved, and a
# lease lapses 30 s or so after its worker went away, so a second more is nothing.
LAPSED_EVERY = timedelta(seconds=1)
_lapsed_looked: dict[str, datetime] = {}


def unpark_lapsed_due(using: str, now: datetime) -> bool:
    """Whether a claim at `now` should put back the lapsed leases' keys (unpark_lapsed): not if
    one of this process committed that look less than LAPSED_EVERY before `now`. The look
    counts once the claim's transaction commits (a claim rolled back looks again next time)."""
    looked = _lapsed_looked.get(using)
    if looked is not None and looked <= now < looked + LAPSED_EVERY:
        return False
    transaction.on_commit(lambda: _lapsed_looked.__setitem__(using, now), using=using)
    return True


def unpark_lapsed(using: str, now: datetime, workflows: list[str]) -> int:
    """Put back the parked instances of the keys (of `workflows`) whose lease lapsed: a lapsed
    lease holds no slot, and no release of it may ever come. How many."""
    # Written out rather than by the ORM: claims under a key's limit send it, and most find none.
    connection = connections[using]
    table = connection.ops.quote_name(WorkflowInstance._meta.db_table)
    at = connection.ops.adapt_datetimefield_value(now)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT DISTINCT workflow, concurrency_key FROM {table} "
            f"WHERE wake_at <= %s AND lease_until < %s AND concurrency_key IS NOT NULL "
            f"AND workflow IN ({', '.join(['%s'] * len(workflows))})",
            [at, at, *workflows],
        )
        lapsed = cursor.fetchall()
    keys = [(w, k) for w, k in lapsed if k is not None]
    if not keys:
        return 0
    rows = WorkflowInstance.objects.using(using).filter(_of_keys(keys), parked=True)
    return rows.update(parked=False)
