"""The store's side of schedule occurrences prepared ahead of their time (schedules/ahead.py):
the schedules coming due, read before their time without a lease; their instances' rows and the
schedules' writes, their values prepared for the database then; and at the time, in one
transaction, the schedules taken while each is at the revision its plan was made from (with no
unfinished instance in the way of its `overlap`), and their instances inserted with that time.

Taking a schedule is the conditional save of the store contract's rule for schedules (a write
while the revision is the expected one), with two conditions more: not paused, and held by no
live lease (a claim that got there first keeps it). Every write to a schedule moves its revision
on, so a plan made before a pause, an upsert, a removal or another worker's tick takes nothing;
a schedule removed and saved again starts at revision 1 again, so its creation time is compared
too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction

from ..attributes import Stored
from ..models import UNFINISHED, WorkflowInstance, WorkflowSchedule
from .backends import backend
from .backends.ahead import Take
from .backends.params import field_index
from .claims import last_signal_id
from .instances import write_beside

# The columns of an instance's row a write sets at its time, whatever the plan's.
_STAMPED = ("created_at", "updated_at", "wake_at")


@dataclass
class PreparedInstance:
    """A pending instance's row, its values prepared for the database (params.row_values()),
    and what create_instances() writes beside it. `timeout`: its deadline's distance from its
    creation (None: no deadline)."""

    id: str
    row: list[Any]
    timeout: timedelta | None
    tags: list[str]
    attributes: dict[str, Stored]
    entries: dict[str, dict[str, Any]]


def coming_due(
    using: str, workflows: list[str], after: datetime, until: datetime
) -> list[tuple[str, int, datetime]]:
    """(id, revision, creation time) of the schedules of `workflows`, not paused, due after
    `after` and by `until`, soonest first: a read, no lease taken."""
    rows = WorkflowSchedule.objects.using(using).filter(
        paused=False, wake_at__gt=after, wake_at__lte=until, workflow__in=workflows
    )
    return list(rows.order_by("wake_at", "id").values_list("id", "revision", "created_at"))


def schedules(using: str, ids: list[str]) -> list[WorkflowSchedule]:
    """The schedules of these ids as stored (inputs still encoded)."""
    return list(WorkflowSchedule.objects.using(using).filter(pk__in=ids))


def prepare_instance(
    using: str,
    instance: WorkflowInstance,
    tags: list[str],
    attributes: dict[str, Stored],
    entries: dict[str, dict[str, Any]],
) -> PreparedInstance:
    """A new instance (instances.new_instance()'s, encoded) made ready for create_prepared()."""
    timeout = None if instance.deadline is None else instance.deadline - instance.created_at
    row = backend(using).prepare_row(instance)
    return PreparedInstance(instance.pk, row, timeout, tags, attributes, entries)


def prepare_take(
    using: str,
    schedule: WorkflowSchedule,
    overlap: bool,
    own: str,
    state: Any,
    wake_at: Any,
) -> Take:
    """The take (prepared.Take) of `schedule` as read, made ready for create_prepared()."""
    id, revision, created_at = schedule.pk, schedule.revision, schedule.created_at
    values = backend(using).prepare_take(id, revision, own, state, wake_at, created_at)
    return Take(id, revision, created_at, overlap, own, values)


def create_prepared(
    using: str, now: datetime, takes: list[Take], instances: dict[str, PreparedInstance]
) -> int:
    """Take the schedules that can be taken, then create their instances (`instances`, by
    schedule id) as created at `now`, each with its tags, search attributes and first journal
    entries (as create_instances()), in a savepoint of the caller's transaction. Returns how
    many it created; when an instance's id is taken, none (rolled back to the savepoint)."""
    store = backend(using)
    model = WorkflowInstance
    stamped = [field_index(model, name, store.connection) for name in _STAMPED]
    deadline_at = field_index(model, "deadline", store.connection)
    cursor_at = field_index(model, "signal_cursor", store.connection)
    with store.write_transaction():
        store.take_write_lock()
        taken = [
            instances[id] for id in store.take_schedules(now, takes, tuple(map(str, UNFINISHED)))
        ]
        if not taken:
            return 0
        stamp = store.prepare_value(model, "created_at", now)
        cursor = store.prepare_value(model, "signal_cursor", last_signal_id(using))
        rows = []
        for prepared in taken:
            row = list(prepared.row)
            for index in stamped:
                row[index] = stamp
            if prepared.timeout is not None:
                row[deadline_at] = store.prepare_value(model, "deadline", now + prepared.timeout)
            row[cursor_at] = cursor
            rows.append(row)
        if store.insert_prepared(model, rows) != len(rows):
            transaction.set_rollback(True, using=using)  # to the savepoint: nothing written
            return 0
        write_beside(using, [(p.id, now, p.tags, p.attributes, p.entries) for p in taken])
    return len(taken)
