"""Schedules in the store: saved conditionally on their revision, leased to one worker at a time.

The store contract's rules: a save is one conditional write (an insert unless the id exists, or
a replace while the revision is the expected one), a claim locks its candidates and skips those
another claim holds, and the lease holder's write is fenced by its lease token.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import F, Q

from .. import codecs
from ..models import UNFINISHED, WorkflowInstance, WorkflowSchedule
from .backends import backend
from .deadlocks import retries_deadlocks


def input_at(id: str) -> str:
    return codecs.where("schedule", id, "input")


@dataclass(frozen=True)
class ScheduleSave:
    """Every field of a schedule as saved; `expect_revision` None inserts it."""

    id: str
    workflow: str
    version: int | None
    declared: bool
    spec: dict[str, Any]
    input: Any
    paused: bool
    wake_at: datetime | None
    state: dict[str, Any]
    expect_revision: int | None
    release_lease: bool
    now: datetime


def decoded(schedule: WorkflowSchedule) -> WorkflowSchedule:
    """The schedule with its input decoded (WorkflowPayloadError when the codec cannot read it)."""
    schedule.input = decoded_input(schedule)
    return schedule


def decoded_input(schedule: WorkflowSchedule) -> Any:
    """The schedule's input decoded, the schedule left as it is (WorkflowPayloadError when the
    codec cannot read it)."""
    return codecs.decode(schedule.input, input_at(schedule.pk))


@retries_deadlocks
def save_schedule(using: str, save: ScheduleSave) -> WorkflowSchedule | None:
    """Insert the schedule unless its id exists, or replace every field of the one whose revision
    is still `expect_revision` (revision + 1). Returns it as stored, or None when the condition
    failed. Of two concurrent saves expecting one revision, one lands."""
    stored_input = codecs.encode(save.input, input_at(save.id))
    fields: dict[str, Any] = {
        "workflow": save.workflow,
        "version": save.version,
        "declared": save.declared,
        "spec": save.spec,
        "input": stored_input,
        "paused": save.paused,
        "wake_at": save.wake_at,
        "state": save.state,
        "updated_at": save.now,
    }
    with transaction.atomic(using=using):
        backend(using).take_write_lock()
        if save.expect_revision is None:
            schedule = WorkflowSchedule(id=save.id, revision=1, created_at=save.now, **fields)
            if not backend(using).insert_ignore(schedule):
                return None
        else:
            if save.release_lease:
                fields.update(lease_token=None, lease_owner=None, lease_until=None)
            rows = WorkflowSchedule.objects.using(using).filter(
                pk=save.id, revision=save.expect_revision
            )
            if not rows.update(revision=F("revision") + 1, **fields):
                return None
            schedule = WorkflowSchedule.objects.using(using).get(pk=save.id)
    schedule.input = save.input
    return schedule


def get_schedule(using: str, id: str) -> WorkflowSchedule | None:
    """The schedule as stored (its input still encoded), or None for an unknown id."""
    return WorkflowSchedule.objects.using(using).filter(pk=id).first()


def list_schedules(
    using: str,
    *,
    workflow: str | None = None,
    declared: bool | None = None,
    limit: int = 100,
    offset: int = 0,
) -> list[WorkflowSchedule]:
    """Schedules matching the filter, by id; a page of them (inputs still encoded)."""
    rows = WorkflowSchedule.objects.using(using).order_by("id")
    if workflow is not None:
        rows = rows.filter(workflow=workflow)
    if declared is not None:
        rows = rows.filter(declared=declared)
    return list(rows[offset : offset + limit])


@retries_deadlocks
def delete_schedule(using: str, id: str, revision: int | None = None) -> bool:
    """Delete the schedule (while its revision is still `revision`, when given): one
    conditional DELETE. QuerySet.delete() is not one when the project has a pre_delete or
    post_delete receiver: it selects the rows, then deletes them by primary key alone, which
    could delete a revision saved in between."""
    rows = WorkflowSchedule.objects.using(using).filter(pk=id)
    if revision is not None:
        rows = rows.filter(revision=revision)
    return int(rows._raw_delete(using)) > 0


@retries_deadlocks
def claim_schedules(
    using: str,
    *,
    owner: str,
    token: str,
    now: datetime,
    lease_until: datetime,
    limit: int,
    workflows: list[str],
) -> list[WorkflowSchedule]:
    """Lease up to `limit` due schedules of `workflows`, most overdue first. Due: not paused,
    wake_at <= now, no lease or an expired one. Two concurrent claims never return the same one."""
    if not workflows or limit < 1:
        return []
    due = Q(paused=False, wake_at__lte=now, workflow__in=workflows) & (
        Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    )
    with transaction.atomic(using=using):
        backend(using).take_write_lock()
        candidates = WorkflowSchedule.objects.using(using).filter(due).order_by("wake_at", "id")
        if backend(using).has_skip_locked:
            candidates = candidates.select_for_update(skip_locked=True)
        ids = list(candidates.values_list("id", flat=True)[:limit])
        if not ids:
            return []
        # The conditions again in the UPDATE: where rows cannot be skipped (SQLite), this keeps
        # two claims from leasing one schedule.
        WorkflowSchedule.objects.using(using).filter(due, pk__in=ids).update(
            lease_token=token, lease_owner=owner, lease_until=lease_until
        )
        return list(
            WorkflowSchedule.objects.using(using)
            .filter(lease_token=token, pk__in=ids)
            .order_by("wake_at", "id")
        )


@contextmanager
def batch_transaction(using: str) -> Iterator[None]:
    """One transaction around a batch of claimed schedules' starts and writes, each of them in
    a savepoint of it: one commit per batch rather than two per schedule. READ COMMITTED on
    MySQL and MariaDB, so that each start reads what its own transaction would have read (the
    latest signal id)."""
    backend(using).read_committed_next()
    with backend(using).write_transaction():
        yield


def running_instances(using: str, ids: list[str]) -> dict[str, list[str]]:
    """The unfinished instances of these schedules, by schedule id: one query (by the
    instances' schedule_id index) for a batch of claimed schedules."""
    running: dict[str, list[str]] = {}
    if not ids:
        return running
    rows = WorkflowInstance.objects.using(using).filter(schedule_id__in=ids, status__in=UNFINISHED)
    for schedule_id, id in rows.values_list("schedule_id", "id"):
        running.setdefault(str(schedule_id), []).append(id)
    return running


@retries_deadlocks
def write_schedule(
    using: str,
    id: str,
    token: str,
    *,
    now: datetime,
    state: dict[str, Any] | None,
    wake_at: datetime | None,
    release: bool,
) -> bool:
    """The lease holder's write: state, wake time, revision + 1, and with `release` the lease
    cleared; only while `token` is the lease token. One conditional update."""
    fields: dict[str, Any] = {"state": state, "wake_at": wake_at, "updated_at": now}
    if release:
        fields.update(lease_token=None, lease_owner=None, lease_until=None)
    rows = WorkflowSchedule.objects.using(using).filter(pk=id, lease_token=token)
    return bool(rows.update(revision=F("revision") + 1, **fields))


def write_schedules(
    using: str,
    token: str,
    *,
    now: datetime,
    writes: list[tuple[str, dict[str, Any] | None, datetime | None]],
) -> int:
    """The lease holder's write of a batch of schedules claimed with `token`, each (id, state,
    wake time): as write_schedule() with `release` for each, in one conditional UPDATE (each
    only while `token` is still its lease token). Returns how many it wrote."""
    if not writes:
        return 0
    return backend(using).write_schedules(token, now, writes)


@retries_deadlocks
def set_paused(
    using: str,
    id: str,
    revision: int,
    *,
    paused: bool,
    state: dict[str, Any],
    wake_at: datetime | None,
    now: datetime,
) -> bool:
    """Pause or resume the schedule while its revision is still `revision`, its input left as
    stored (not encoded again) and its lease cleared. One conditional update."""
    rows = WorkflowSchedule.objects.using(using).filter(pk=id, revision=revision)
    return bool(
        rows.update(
            paused=paused,
            state=state,
            wake_at=wake_at,
            updated_at=now,
            revision=F("revision") + 1,
            lease_token=None,
            lease_owner=None,
            lease_until=None,
        )
    )


def wake_schedule(using: str, id: str, now: datetime) -> None:
    """An instance the schedule started ended: if the schedule buffers an occurrence behind it
    (overlap "buffer-one"), make it due now. Bumps the revision like every other write, so a
    save conditional on the revision read before (a confirmation) can't put the wake time back."""
    WorkflowSchedule.objects.using(using).filter(
        pk=id, wake_at__gt=now, spec__overlap="buffer-one"
    ).update(wake_at=now, revision=F("revision") + 1)
