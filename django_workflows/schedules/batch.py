"""A claimed batch of schedules planned in Python, then written in a few statements.

What each schedule of the batch does (start its occurrence, skip it, buffer it, hand the schedule
back) is decided first, without a write: its new state and wake time, and the instance it starts,
checked and encoded. Then one transaction writes them all: the instances in one multi-row insert
(with their tags, attributes and journal entries), the schedules' state, wake time and lease
release in one UPDATE fenced by the claim's token, and the skipped occurrences' events after the
commit. The common case only: a schedule whose step depends on a start's outcome or needs more
than these writes (several occurrences to start, cancel-previous with an instance running, an
input function, an input the codec cannot read, a plan that raises) has no plan here and takes
the runner's per-schedule path, and so does the whole batch when its write fails or finds an
occurrence's id taken (a repeated tick, or an instance the schedule did not start): nothing of
the batch is written then, and each schedule runs alone, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..definitions import Schedule, Workflow
from ..engine.registry import registry
from ..engine.starts import NewInstance, StartOptions, new_instance, start_new_instances
from ..errors import WorkflowPayloadError
from ..events import emit
from ..models import WorkflowSchedule
from ..store import schedules as store
from . import timing as timings
from .declared import CONFIRM_EVERY
from .ids import occurrence_id
from .state import State, next_wake, timing_of
from .timing import Timing

MISSED_GRACE = timedelta(minutes=1)  # missed="skip": an occurrence found this late still starts
MISSED_MAX = 100  # missed="all": at most the latest 100
# A worker that cannot start a due schedule (its code does not declare it, or it does not register
# the pinned version) hands it back for this long while missed="skip" would still start the due
# occurrence, so that a worker that can start it finds it within its minute; else for a minute.
HAND_BACK_SOON = timedelta(seconds=5)

Skipped = tuple[str, datetime, datetime]  # reason, first and last occurrence passed over


class IdTaken(Exception):
    """An occurrence of the batch has an instance already: the batch is left to the
    per-schedule path, which tells a repeated start from a conflict."""


@dataclass
class Plan:
    """What a claimed schedule's tick writes: its new state and wake time, the instance it
    starts (if any), and the occurrences it passes over (events emitted after the commit)."""

    schedule: WorkflowSchedule
    state: dict[str, Any] | None
    wake_at: datetime | None
    new: NewInstance | None = None
    skipped: list[Skipped] = field(default_factory=list)


def before(timing: Timing, after: datetime, occurrence: datetime) -> datetime:
    """The occurrence just before `occurrence` (there is one after `after`)."""
    return timings.between(timing, after, occurrence - timedelta(milliseconds=1), 1)[-1]


def due_starts(
    timing: Timing, spec: dict[str, Any], state: State, now: datetime
) -> tuple[list[datetime], Skipped | None]:
    """The due occurrences to start as `missed` says, and the span it passes over (if any);
    moves the state's cursor past the due ones."""
    due = timings.between(timing, state.cursor, now, MISSED_MAX)
    if not due:
        return [], None
    first_missed = timings.next_after(timing, state.cursor)
    missed = spec.get("missed", "skip")
    if missed == "skip":
        start = [at for at in due if now - at <= MISSED_GRACE]
    elif missed == "once":
        start = [due[-1]]
    else:
        start = list(due)
    passed = [at for at in due if at not in start]
    earlier = first_missed is not None and first_missed < due[0]  # beyond the last 100
    skipped: Skipped | None = None
    if passed or earlier:
        last = passed[-1] if passed else before(timing, state.cursor, due[0])
        skipped = ("missed", first_missed or due[0], last)
    state.cursor = due[-1]
    return start, skipped


def due_within_grace(schedule: WorkflowSchedule, now: datetime) -> bool:
    """Whether an occurrence is due that missed="skip" still starts if found by now + a
    minute: handed back for a minute, it would be found too late."""
    latest = timings.between(timing_of(schedule), State.of(schedule).cursor, now, 1)
    return bool(latest) and now - latest[-1] <= MISSED_GRACE


def hand_back_wake(schedule: WorkflowSchedule, now: datetime, *, soon: bool = False) -> datetime:
    """When a schedule handed back to a process that can start it is due again."""
    return now + (HAND_BACK_SOON if soon else CONFIRM_EVERY)


def definition_of(schedule: WorkflowSchedule) -> Workflow | None:
    """The definition the schedule starts, if this process registers it."""
    if schedule.version is not None:
        return registry.get(schedule.workflow, schedule.version)
    return registry.latest(schedule.workflow)


def plan(
    using: str,
    schedule: WorkflowSchedule,
    now: datetime,
    in_code: dict[str, tuple[Workflow, Schedule]],
    running: list[str],
) -> Plan | None:
    """The schedule's tick, decided without a write; None when it is not the common case (see
    the module's docstring) and takes the per-schedule path. `running`: its unfinished
    instances as read for the batch."""
    declared = in_code.get(schedule.pk) if schedule.declared else None
    if schedule.declared and declared is None:
        # Another process's code declares it: only such processes start its timings.
        soon = due_within_grace(schedule, now)
        return Plan(schedule, schedule.state, hand_back_wake(schedule, now, soon=soon))
    registered = definition_of(schedule)
    if registered is None:
        # Pinned to a version this process does not register: leave it to one that does.
        soon = due_within_grace(schedule, now)
        return Plan(schedule, schedule.state, hand_back_wake(schedule, now, soon=soon))
    if declared is not None and callable(declared[1].input):
        return None
    try:
        input = store.decoded_input(schedule)
    except WorkflowPayloadError:
        return None  # the per-schedule path logs it and hands the schedule back
    spec = schedule.spec
    timing = timing_of(schedule)
    state = State.of(schedule)
    start, missed = due_starts(timing, spec, state, now)
    candidates = ([state.buffered] if state.buffered is not None else []) + start
    if len(candidates) > 1:
        return None
    skipped: list[Skipped] = [missed] if missed is not None else []
    state.buffered = None
    new = None
    limit = spec.get("limit")
    if candidates and (limit is None or state.runs < limit):
        at = candidates[0]
        own = occurrence_id(schedule.pk, at)
        overlap = spec.get("overlap", "skip")
        # The occurrence's own instance is no overlap (see Scheduler._overlap_allows).
        if overlap == "allow" or not [id for id in running if id != own]:
            options = StartOptions(
                id=own, priority=spec.get("priority"), schedule_id=schedule.pk, scheduled_at=at
            )
            new = new_instance(registered, input, options, using=using)
            state.runs += 1
        elif overlap == "skip":
            skipped.append(("overlap", at, at))
        elif overlap == "buffer-one":
            state.buffered = at
        else:  # cancel-previous, with an instance to cancel
            return None
    return Plan(schedule, state.json(), next_wake(timing, spec, state, now), new, skipped)


def write(using: str, token: str, now: datetime, plans: list[Plan]) -> None:
    """Write the batch's plans in the caller's transaction: the instances they start, then the
    schedules (each while `token` is still its lease token). Raises IdTaken, having written
    nothing, when an occurrence's instance exists."""
    if not start_new_instances(using, [plan.new for plan in plans if plan.new is not None]):
        raise IdTaken
    store.write_schedules(
        using,
        token,
        now=now,
        writes=[(plan.schedule.pk, plan.state, plan.wake_at) for plan in plans],
    )


def skipped_event(schedule: WorkflowSchedule, skipped: Skipped, now: datetime) -> None:
    """Emit `schedule-skipped` for occurrences the schedule passed over."""
    reason, first, last = skipped
    emit(
        "schedule-skipped",
        id=schedule.pk,
        workflow=schedule.workflow,
        version=schedule.version,
        at=now,
        reason=reason,
        **{"from": first, "to": last},
    )
