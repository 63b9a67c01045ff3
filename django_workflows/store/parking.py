"""Parked instances: due instances whose concurrency key had every slot taken when a claim
passed over them, kept out of the claim index's range until a lease of that key ends.

Without parking, a claim under a key's limit reads every due instance of every full key before
the first one it may lease (10,000 keys at their limit with five due instances each: 50,000 rows
read and dropped per claim). A parked instance is still due (its status, wake time and place in
the claim order are unchanged): only the claim index leaves it out.

The rule that keeps a parked instance from waiting for nothing: **an instance is parked only
while its claim holds the row locks of its key's live leases**, every slot's. The lease holder's
release updates its row, so it waits for the claim to commit, and then, in the release's own
transaction, puts back the parked instances of its key (`unpark_key`), which it now sees. A
release that holds its row first is skipped (SKIP LOCKED) by the claim, whose key then does
not count as full for parking. A lease that lapses without a release holds no slot: each claim
under limits first puts back the parked instances of the keys whose lease lapsed
(`unpark_lapsed`).
"""

from __future__ import annotations

import functools
import operator
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import Protocol

from django.db.models import Count, Q

from ..models import WorkflowInstance
from . import due as due_scan
from .backends import backend


class Keyed(Protocol):
    id: str
    workflow: str
    concurrency_key: str | None


def _of_keys(keys: Iterable[tuple[str, str]]) -> Q:
    """The rows of these (workflow, key) pairs, one IN list per workflow."""
    by_workflow: dict[str, set[str]] = {}
    for workflow, key in keys:
        by_workflow.setdefault(workflow, set()).add(key)
    return functools.reduce(
        operator.or_,
        (Q(workflow=w, concurrency_key__in=sorted(k)) for w, k in sorted(by_workflow.items())),
    )


def full_keys(
    using: str, now: datetime, rows: Iterable[Keyed], per_key: dict[str, int]
) -> set[tuple[str, str]]:
    """The (workflow, key) pairs of `rows` whose live leases (as of `now`) take every one of
    the key's `per_key` slots: one aggregate over dw_instance_live_key."""
    keys = {
        (row.workflow, row.concurrency_key)
        for row in rows
        if row.workflow in per_key and row.concurrency_key is not None
    }
    if not keys:
        return set()
    live = (
        WorkflowInstance.objects.using(using)
        .filter(_of_keys(keys), lease_until__gte=now)
        .order_by()
        .values_list("workflow", "concurrency_key")
        .annotate(n=Count("id"))
    )
    return {(w, k) for w, k, n in live if n >= per_key[w]}


def park(using: str, now: datetime, rows: list[Keyed], per_key: dict[str, int]) -> int:
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


def unpark_key(using: str, workflow: str, key: str) -> int:
    """A lease of (workflow, key) ended, in this transaction, after the lease holder's row was
    locked: put back the key's parked instances. How many."""
    rows = WorkflowInstance.objects.using(using).filter(
        workflow=workflow, concurrency_key=key, parked=True
    )
    return rows.update(parked=False)


def unpark_lapsed(using: str, now: datetime, workflows: list[str]) -> int:
    """Put back the parked instances of the keys (of `workflows`) whose lease lapsed: a lapsed
    lease holds no slot, and no release of it may ever come. How many."""
    lapsed = (
        WorkflowInstance.objects.using(using)
        .filter(due_scan.lapsed(now), workflow__in=workflows, concurrency_key__isnull=False)
        .order_by()
        .values_list("workflow", "concurrency_key")
        .distinct()
    )
    keys = [(w, k) for w, k in lapsed if k is not None]
    if not keys:
        return 0
    rows = WorkflowInstance.objects.using(using).filter(_of_keys(keys), parked=True)
    return rows.update(parked=False)
