"""The public schedules API (`django_workflows.schedules`): `upsert()` the schedules that aren't
in the code (one per customer, say), `pause()`, `resume()`, `trigger()`, `preview()`, and read
any of them with `get()` and `list()`.

Declared schedules (`@workflow(schedules=[Schedule(...)])`) belong to the code: `upsert()` and
`remove()` refuse them. Each function takes `using=` like the rest of the client.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from .. import clock
from ..client.instances import check_page, get_status
from ..conf import database_alias
from ..definitions import Schedule, Workflow, check_schedule_id, check_schedule_options
from ..durations import Duration
from ..engine.registry import registry
from ..errors import WorkflowNotFoundError, WorkflowStateError
from ..jsonvalues import check_lookup
from ..models import Status, WorkflowSchedule
from ..results import StartResult
from ..store import schedules as store
from ..store.jsonvalues import to_json
from . import timing as timings
from .declared import declared_in_code
from .start import start_occurrence
from .state import State, next_wake, spec_of, timing_of

__all__ = [
    "ScheduleStatus",
    "get",
    "list",
    "pause",
    "preview",
    "remove",
    "resume",
    "trigger",
    "upsert",
]


@dataclass(frozen=True)
class ScheduleStatus:
    """A schedule as `get()` and `list()` return it. `next_at` is its next occurrence (None while
    paused or once it ended); `runs` counts the occurrences it started."""

    id: str
    workflow: str
    version: int | None
    declared: bool
    cron: str | None
    every: timedelta | None
    rrule: str | None
    tz: str
    start_at: datetime | None
    end_at: datetime | None
    limit: int | None
    missed: str
    overlap: str
    priority: int | None
    input: Any
    paused: bool
    next_at: datetime | None
    runs: int
    created_at: datetime
    updated_at: datetime


def _status(schedule: WorkflowSchedule) -> ScheduleStatus:
    spec = schedule.spec
    timing = timing_of(schedule)
    state = State.of(schedule)
    next_at = None
    if not schedule.paused and not (spec.get("limit") is not None and state.runs >= spec["limit"]):
        next_at = timings.next_after(timing, state.cursor)
    return ScheduleStatus(
        id=schedule.pk,
        workflow=schedule.workflow,
        version=schedule.version,
        declared=schedule.declared,
        cron=timing.cron,
        every=timing.every,
        rrule=timing.rrule,
        tz=timing.tz,
        start_at=timing.start_at,
        end_at=timing.end_at,
        limit=spec.get("limit"),
        missed=spec.get("missed", "skip"),
        overlap=spec.get("overlap", "skip"),
        priority=spec.get("priority"),
        input=schedule.input,
        paused=schedule.paused,
        next_at=next_at,
        runs=state.runs,
        created_at=schedule.created_at,
        updated_at=schedule.updated_at,
    )


def _stored(using: str, id: str) -> WorkflowSchedule:
    check_lookup("The schedule id", id)
    schedule = store.get_schedule(using, id)
    if schedule is None:
        raise WorkflowNotFoundError(f"No schedule has the id {id!r}.")
    return schedule


def upsert(
    id: str,
    *,
    workflow: Workflow | str,
    cron: str | None = None,
    every: Duration | None = None,
    rrule: str | None = None,
    tz: str = "UTC",
    start_at: datetime | None = None,
    end_at: datetime | None = None,
    limit: int | None = None,
    missed: str = "skip",
    overlap: str = "skip",
    priority: int | None = None,
    input: Any = None,
    version: int | None = None,
    using: str | None = None,
) -> ScheduleStatus:
    """Save a schedule that is not in the code, or replace the one saved with this id; it runs
    from its first occurrence after now. Raises ValueError naming a bad option, TypeError for an
    input that is not JSON, WorkflowNotFoundError for a workflow (or `version`) this application
    does not register, and WorkflowStateError for a schedule declared in code."""
    using = database_alias(using)
    check_schedule_options(id, missed=missed, overlap=overlap, limit=limit, priority=priority)
    declared = declared_in_code().get(id)
    if declared is not None:  # declared in this code, even before a worker saved it
        raise WorkflowStateError(
            f"Schedule {id!r} is declared in the code of workflow {declared[0].name!r}: "
            f"change it there."
        )
    definition = registry.resolve(workflow, version)
    value = to_json(input, f"The input of schedule {id!r}", using=using)
    for _ in range(5):  # another change raced this one: read it again
        now = clock.now()
        existing = store.get_schedule(using, id)
        if existing is not None and existing.declared:
            raise WorkflowStateError(
                f"Schedule {id!r} is declared in the code of workflow {existing.workflow!r}: "
                f"change it there."
            )
        try:
            timing = timings.timing(
                cron=cron,
                every=every,
                rrule=rrule,
                tz=tz,
                start_at=start_at,
                end_at=end_at,
                anchor=now if rrule and start_at is None else None,
            )
        except ValueError as error:
            raise ValueError(f"Schedule {id!r}: {error}") from None
        timing = _keep_anchor(timing, existing)
        spec = spec_of(timing, limit=limit, missed=missed, overlap=overlap, priority=priority)
        state = State(cursor=now, runs=State.of(existing).runs if existing is not None else 0)
        saved = store.save_schedule(
            using,
            store.ScheduleSave(
                id=id,
                workflow=definition.name,
                version=version,
                declared=False,
                spec=spec,
                input=value,
                paused=existing.paused if existing is not None else False,
                wake_at=next_wake(timing, spec, state, now),
                state=state.json(),
                expect_revision=existing.revision if existing is not None else None,
                release_lease=True,
                now=now,
            ),
        )
        if saved is not None:
            return _status(saved)
    raise WorkflowStateError(f"Schedule {id!r} kept changing while it was being saved.")


def _keep_anchor(timing: timings.Timing, existing: WorkflowSchedule | None) -> timings.Timing:
    """An rrule without start_at counts from its first save while the rule and its time zone
    stay the same, so "every 4 weeks" keeps its weeks when only the input or options change."""
    stored = (existing.spec.get("timing") or {}) if existing is not None else {}
    if (
        timing.anchor is None
        or not stored.get("anchor")
        or (stored.get("rrule"), stored.get("tz")) != (timing.rrule, timing.tz)
    ):
        return timing
    return replace(timing, anchor=datetime.fromisoformat(stored["anchor"]))


def get(id: str, *, using: str | None = None) -> ScheduleStatus | None:
    """The schedule, or None for an unknown id. Raises WorkflowPayloadError for an input the
    CODEC setting cannot read, ValueError for an id with a NUL or a lone surrogate in it."""
    check_lookup("The schedule id", id)
    schedule = store.get_schedule(database_alias(using), id)
    return None if schedule is None else _status(store.decoded(schedule))


def list(
    *,
    workflow: Workflow | str | None = None,
    limit: int = 100,
    offset: int = 0,
    using: str | None = None,
) -> builtins.list[ScheduleStatus]:
    """The schedules (of `workflow`, when given), by id; a page of them."""
    check_page(limit, offset)
    name = workflow.name if isinstance(workflow, Workflow) else workflow
    check_lookup("The workflow name", name)
    rows = store.list_schedules(database_alias(using), workflow=name, limit=limit, offset=offset)
    return [_status(store.decoded(row)) for row in rows]


def remove(id: str, *, using: str | None = None) -> bool:
    """Delete a schedule saved with upsert(); the instances it started go on. Raises
    WorkflowNotFoundError for an unknown id and WorkflowStateError for a declared schedule."""
    using = database_alias(using)
    for _ in range(5):  # a worker wrote to it meanwhile: read it again
        schedule = _stored(using, id)
        if schedule.declared:
            raise WorkflowStateError(
                f"Schedule {id!r} is declared in the code of workflow {schedule.workflow!r}: "
                f"remove it there."
            )
        # Conditional on the revision read: never deletes a declared one saved meanwhile.
        if store.delete_schedule(using, id, schedule.revision):
            return True
    raise WorkflowStateError(f"Schedule {id!r} kept changing while it was being removed.")


def pause(id: str, *, using: str | None = None) -> ScheduleStatus:
    """Stop the schedule's occurrences until resume(); its stored input is kept as it is."""
    return _set_paused(id, True, using)


def resume(id: str, *, using: str | None = None) -> ScheduleStatus:
    """Start the occurrences of a paused schedule again, from the first one after now. A
    schedule that isn't paused is left as it is (its due occurrences still start)."""
    return _set_paused(id, False, using)


def _set_paused(id: str, paused: bool, using: str | None) -> ScheduleStatus:
    using = database_alias(using)
    for _ in range(5):
        now = clock.now()
        schedule = _stored(using, id)
        if not paused and not schedule.paused:
            return _status(store.decoded(schedule))
        state = State.of(schedule)
        wake_at = None
        if not paused:
            state.cursor, state.buffered = now, None
            wake_at = next_wake(timing_of(schedule), schedule.spec, state, now)
        if store.set_paused(
            using,
            id,
            schedule.revision,
            paused=paused,
            state=state.json(),
            wake_at=wake_at,
            now=now,
        ):
            return _status(store.decoded(_stored(using, id)))
    raise WorkflowStateError(f"Schedule {id!r} kept changing while it was being paused or resumed.")


def trigger(id: str, *, using: str | None = None) -> StartResult:
    """Start an occurrence now, whatever `overlap` says and even while the schedule is paused,
    with now as its time. Needs a process that registers the schedule's workflow (and version,
    when the schedule pins one): raises WorkflowNotFoundError otherwise, for an unknown id,
    and when a delete() removed the occurrence's instance right after it started."""
    using = database_alias(using)
    schedule = store.decoded(_stored(using, id))
    now = clock.now()
    now = now.replace(microsecond=now.microsecond // 1000 * 1000)  # ids keep milliseconds
    instance_id, created = start_occurrence(using, schedule, now)
    status = get_status(instance_id, using=using)
    if status is None:  # a delete() committed between the start and this read
        raise WorkflowNotFoundError(
            f"The occurrence {instance_id!r} of schedule {id!r} was deleted right after it "
            f"started: it no longer exists."
        )
    return StartResult(status.id, status.workflow, status.version, created, Status(status.status))


def preview(
    id_or_spec: str | Schedule | dict[str, Any],
    *,
    start: datetime | None = None,
    count: int = 10,
    using: str | None = None,
) -> builtins.list[datetime]:
    """The next `count` occurrences after `start` (default now), as aware UTC datetimes, of a
    saved schedule (its id), a Schedule, or a timing given as a dict (`cron`, `every`, `rrule`,
    `tz`, `start_at`, `end_at`). A 6-field cron reads the seconds first: "0 2 1 * * *" gives
    01:02:00 every day. ValueError for a bad timing (naming how a cron's fields were read)."""
    if not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be a positive integer, not {count!r}.")
    after = start or clock.now()
    if isinstance(id_or_spec, str):
        check_schedule_id(id_or_spec)
        schedule = _stored(database_alias(using), id_or_spec)
        state = State.of(schedule)
        limit = schedule.spec.get("limit")
        if limit is not None:
            count = min(count, max(limit - state.runs, 0))
        return timings.upcoming(timing_of(schedule), after, count)
    if isinstance(id_or_spec, Schedule):
        fields = {
            name: getattr(id_or_spec, name)
            for name in ("cron", "every", "rrule", "tz", "start_at", "end_at")
        }
    elif isinstance(id_or_spec, dict):
        fields = dict(id_or_spec)
    else:
        raise TypeError(f"preview() takes a schedule id, a Schedule or a dict, not {id_or_spec!r}.")
    if fields.get("rrule") and fields.get("start_at") is None:
        fields["anchor"] = after
    return timings.upcoming(timings.timing(**fields), after, count)
