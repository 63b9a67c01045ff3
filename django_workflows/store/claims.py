"""The claim: lease due instances to one worker, of the workflows it runs and the queues it
serves, in priority order, within the concurrency and rate limits.

Two concurrent claims never return the same instance. The backend claims, whole, in one call
(Backend.claim): by the ORM, or by a database's own faster way (one statement on PostgreSQL, one
transaction of batched statements on MySQL and MariaDB, SQLite's at its process's turn to
write); under limits with the choice of `limits.pick` inside its transaction. Here: the
arguments, the deadlock retries, the journals read after the commit and the payloads decoded.
On PostgreSQL a claim without limits can also ride on a release (store.backends.writes.Ride):
the lease holder's write that hands its instance back leases the next due one with the same
ranges.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import F

from ..errors import WorkflowPayloadError
from ..models import JournalEntry, WorkflowInstance
from . import limits, payloads
from .backends import backend
from .backends.writes import ClaimRequest
from .deadlocks import retries_deadlocks


@dataclass(frozen=True)
class Claim:
    instances: list[WorkflowInstance]
    last_signal_id: int
    # The journals of the claimed instances that ran before, read in the claim's transaction.
    journals: dict[str, list[tuple[str, dict[str, Any]]]] = field(default_factory=dict)
    # Instances whose payloads the codec cannot read (a key not listed): left alone.
    unreadable: dict[str, WorkflowPayloadError] = field(default_factory=dict)


def last_signal_id(using: str) -> int:
    """The newest signal's id, 0 before the first: what an instance started or claimed now has
    seen (Backend.last_signal_id)."""
    return backend(using).last_signal_id()


@retries_deadlocks
def claim(
    using: str,
    *,
    owner: str,
    token: str,
    now: datetime,
    lease_until: datetime,
    limit: int,
    workflows: list[tuple[str, int]],
    concurrency: dict[str, limits.ConcurrencyRule] | None = None,
    rates: dict[str, limits.RateRule] | None = None,
    queues: list[str] | None = None,
    first_journals: bool = False,
) -> Claim:
    """Lease up to `limit` due instances of `workflows` to one worker: lowest priority first,
    then the most overdue. Two concurrent claims never return the same instance. With
    `concurrency` and `rates` (by workflow name), only what the limits let start. With
    `queues`, only instances waiting in one of them (None: every queue); the order holds across
    the queues, and the limits count the instances of every queue. `first_journals`: read the
    journals of first executions too where start() stored headers with them (`has_headers`)."""
    if not workflows or limit < 1 or queues == []:
        return Claim([], 0)
    queues = sorted(set(queues)) if queues is not None else None
    names = {name for name, _ in workflows}
    concurrency = {k: v for k, v in (concurrency or {}).items() if k in names}
    rates = {k: v for k, v in (rates or {}).items() if k in names}
    # Under limits, the limits' choice of the candidates, inside the backend's claim.
    pick = (
        functools.partial(
            limits.pick,
            using,
            now=now,
            limit=limit,
            workflows=workflows,
            concurrency=concurrency,
            rates=rates,
            queues=queues,
        )
        if concurrency or rates
        else None
    )
    request = ClaimRequest(owner, token, now, lease_until, limit, workflows, queues)
    claimed, last = backend(using).claim(request, pick)
    # The journals after the commit: nobody else writes them while leased, and under MySQL's
    # REPEATABLE READ the claim's snapshot (taken by its first read, before the instances were
    # locked) could miss the previous lease holder's last write.
    return _decoded(Claim(claimed, last, _journals(using, claimed, first_journals)))


@retries_deadlocks
def hand_back(using: str, token: str, lease_until: datetime) -> int:
    """Hand back what a claim leased with `token` until `lease_until` if its worker never
    learned it (the connection broke after the commit): their leases end now, as a release's
    do, so the next claim takes them, not one a lease later, and the claim is not counted in
    `runs` (nothing ran). How many; 0 when the claim never committed. The lease's end finds the
    rows by index, only ever this claim's."""
    rows = WorkflowInstance.objects.using(using).filter(lease_until=lease_until, lease_token=token)
    with backend(using).write_transaction():
        backend(using).take_write_lock()
        held = list(rows.select_for_update().values_list("workflow", "concurrency_key"))
        if held:
            rows.update(lease_token=None, lease_until=None, runs=F("runs") - 1)
            for workflow, key in sorted({(w, k) for w, k in held if k is not None}):
                backend(using).unpark_key(workflow, key)
    return len(held)


def rode_claim(
    using: str, instances: list[WorkflowInstance], last: int, *, first_journals: bool = False
) -> Claim:
    """The Claim of instances a ride leased (store.backends.writes.Ride), as a claim returns them:
    their journals read after the commit, their payloads decoded."""
    return _decoded(Claim(instances, last, _journals(using, instances, first_journals)))


def _decoded(claim: Claim) -> Claim:
    """The claim with its payloads decoded; an instance the codec cannot read is in
    `unreadable` with the error, for the worker to leave alone."""
    for instance in claim.instances:
        try:
            payloads.decode_instance(instance)
            claim.journals[instance.pk] = payloads.decode_journal(
                instance.pk, claim.journals.get(instance.pk, [])
            )
        except WorkflowPayloadError as error:
            claim.unreadable[instance.pk] = error
    return claim


def _journals(
    using: str, claimed: list[WorkflowInstance], first_journals: bool = False
) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """The journals of the claimed instances that ran before, or were forked with one. Any
    other first execution has none but the headers start() stored: with `first_journals`, the
    journals of the first executions whose instance has them (`has_headers`) are read too."""
    resumed = [
        instance.pk
        for instance in claimed
        if instance.runs > 1 or instance.forked_from or (first_journals and instance.has_headers)
    ]
    journals: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    if resumed:
        rows = JournalEntry.objects.using(using).filter(instance_id__in=resumed).order_by("id")
        for instance_id, name, document in rows.values_list("instance_id", "name", "document"):
            journals.setdefault(instance_id, []).append((name, document))
    return journals
