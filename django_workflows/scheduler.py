"""What workers do for schedules: keep the declared ones saved, and start the due occurrences.

A schedule row holds its `spec` (when and how it runs: the timing, `limit`, `missed`,
`overlap`, `priority`) and its `state` (the `cursor`, up to which occurrences were handled, the
occurrences started as `runs`, a `buffered` occurrence, and for a declared schedule when a
process whose code declares it last confirmed it). A worker claims the due schedules of its
workflows under a lease, starts their occurrences as instances whose id is
`<schedule id>@<time>` (so a crash that repeats the work starts nothing twice), then writes the
new state and hands the schedule back.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from . import clock
from .definitions import Schedule, ScheduleOccurrence, Workflow
from .engine import occurrences
from .engine.occurrences import Timing
from .errors import WorkflowError, WorkflowIdConflictError, WorkflowPayloadError
from .events import emit
from .models import UNFINISHED, WorkflowInstance, WorkflowSchedule
from .registry import registry
from .store import schedules as store

logger = logging.getLogger("django_workflows")

CONFIRM_EVERY = timedelta(minutes=1)
STALE_AFTER = timedelta(minutes=5)  # a declared schedule nobody confirmed for this long goes
MISSED_GRACE = timedelta(minutes=1)  # missed="skip": an occurrence found this late still starts
MISSED_MAX = 100  # missed="all": at most the latest 100
BUFFER_RECHECK = timedelta(minutes=1)
# A worker that cannot start a due schedule (its code does not declare it, or it does not register
# the pinned version) hands it back for this long while missed="skip" would still start the due
# occurrence, so that a worker that can start it finds it within its minute; else for a minute.
HAND_BACK_SOON = timedelta(seconds=5)


# -- spec and state ------------------------------------------------------------------------------


def spec_of(
    timing: Timing,
    *,
    limit: int | None,
    missed: str,
    overlap: str,
    priority: int | None,
    input_function: bool = False,
) -> dict[str, Any]:
    return {
        "timing": occurrences.to_json(timing),
        "limit": limit,
        "missed": missed,
        "overlap": overlap,
        "priority": priority,
        "input_function": input_function,
    }


def timing_of(schedule: WorkflowSchedule) -> Timing:
    return occurrences.from_json(schedule.spec["timing"])


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


@dataclass
class State:
    cursor: datetime
    runs: int = 0
    buffered: datetime | None = None
    confirmed_at: datetime | None = None

    @classmethod
    def of(cls, schedule: WorkflowSchedule) -> State:
        data = schedule.state or {}
        return cls(
            cursor=_time(data.get("cursor")) or schedule.created_at,
            runs=int(data.get("runs", 0)),
            buffered=_time(data.get("buffered")),
            confirmed_at=_time(data.get("confirmed_at")),
        )

    def json(self) -> dict[str, Any]:
        return {
            "cursor": _iso(self.cursor),
            "runs": self.runs,
            "buffered": _iso(self.buffered),
            "confirmed_at": _iso(self.confirmed_at),
        }


def next_wake(timing: Timing, spec: dict[str, Any], state: State, now: datetime) -> datetime | None:
    """When a worker next has something to do for the schedule: its next occurrence (none once
    `limit` occurrences started), or soon again while an occurrence is buffered."""
    limit = spec.get("limit")
    if limit is not None and state.runs >= limit:
        return None
    wake = occurrences.next_after(timing, state.cursor)
    if state.buffered is not None:
        recheck = now + BUFFER_RECHECK
        wake = recheck if wake is None else min(wake, recheck)
    return wake


# -- declared schedules ---------------------------------------------------------------------------


def declared_in_code(names: list[str] | None = None) -> dict[str, tuple[Workflow, Schedule]]:
    """The schedules this process's code declares, by id.

    A workflow's schedules are those of its highest registered version (like its limits): an
    older version kept registered for its unfinished instances declares nothing, so a schedule
    that the new version drops or renames goes."""
    latest: dict[str, Workflow] = {}
    for definition in registry.all():  # by name, then version: a higher version comes later
        if names is None or definition.name in names:
            latest[definition.name] = definition
    return {
        schedule.id: (definition, schedule)
        for definition in latest.values()
        for schedule in definition.schedules
    }


def _declared_spec(schedule: Schedule, anchor: datetime | None) -> dict[str, Any]:
    timing = occurrences.timing(
        cron=schedule.cron,
        every=schedule.every,
        rrule=schedule.rrule,
        tz=schedule.tz,
        start_at=schedule.start_at,
        end_at=schedule.end_at,
        anchor=anchor if schedule.rrule and schedule.start_at is None else None,
    )
    return spec_of(
        timing,
        limit=schedule.limit,
        missed=schedule.missed,
        overlap=schedule.overlap,
        priority=schedule.priority,
        input_function=callable(schedule.input),
    )


def _same(stored: WorkflowSchedule, definition: Workflow, spec: dict[str, Any]) -> bool:
    """Whether the stored schedule is this declaration, whichever version of the workflow saved
    it (the rrule's anchor aside)."""
    if not stored.declared or stored.workflow != definition.name:
        return False
    mine = {**spec, "timing": {**spec["timing"], "anchor": None}}
    theirs = {**stored.spec, "timing": {**stored.spec.get("timing", {}), "anchor": None}}
    return mine == theirs


def sync_declared(using: str, now: datetime | None = None) -> None:
    """Save the schedules this process's code declares, confirm them every minute, and delete
    the declared schedules nobody confirmed for five minutes that this code does not declare.

    A schedule another process confirms is left as it is while a newer version of its workflow
    declares it (or another workflow does), so an old process restarting mid-deploy changes
    nothing. The same declaration saved by another version is taken over as it is."""
    now = now or clock.now()
    mine = declared_in_code()
    stored = {s.pk: s for s in store.list_schedules(using, declared=True, limit=100_000)}
    for id, (definition, schedule) in mine.items():
        current = stored.get(id) or store.get_schedule(using, id)
        _sync_one(using, now, definition, schedule, current)
    for id, row in stored.items():
        if id in mine:
            continue
        state = State.of(row)
        if state.confirmed_at is None or now - state.confirmed_at >= STALE_AFTER:
            if store.delete_schedule(using, id, row.revision):
                logger.info("Declared schedule %s is in no process's code any more: deleted.", id)


def _sync_one(
    using: str,
    now: datetime,
    definition: Workflow,
    schedule: Schedule,
    stored: WorkflowSchedule | None,
) -> None:
    anchor = (stored.spec.get("timing") or {}).get("anchor") if stored is not None else None
    spec = _declared_spec(schedule, _time(anchor) or now)

    def save(
        state: State, *, paused: bool, wake_at: datetime | None, revision: int | None, release: bool
    ) -> None:
        store.save_schedule(
            using,
            store.ScheduleSave(
                id=schedule.id,
                workflow=definition.name,
                version=definition.version,
                declared=True,
                spec=spec,
                input=None if callable(schedule.input) else schedule.input,
                paused=paused,
                wake_at=wake_at,
                state=state.json(),
                expect_revision=revision,
                release_lease=release,
                now=now,
            ),
        )

    if stored is None:
        # From when the process started: now, or with a test's manual clock its start.
        started = getattr(clock.get_clock(), "start", None)
        cursor = started if isinstance(started, datetime) and started < now else now
        state = State(cursor=cursor, confirmed_at=now)
        wake_at = next_wake(occurrences.from_json(spec["timing"]), spec, state, now)
        save(state, paused=False, wake_at=wake_at, revision=None, release=False)
        return
    state = State.of(stored)
    fresh = state.confirmed_at is not None and now - state.confirmed_at < STALE_AFTER
    same = _same(stored, definition, spec)
    if same and stored.version == definition.version:
        if state.confirmed_at is not None and now - state.confirmed_at < CONFIRM_EVERY:
            return
        # Confirm it, and save its input again under the codec's current key.
        state.confirmed_at = now
        replace = False
    else:
        newer = (
            stored.declared
            and stored.workflow == definition.name
            and ((stored.version or 0) > definition.version)
        )
        other_code = stored.declared and stored.workflow != definition.name
        if fresh and (newer or other_code):
            return  # another process's code owns it while it confirms it
        if same:
            # The same declaration, saved by another version of the workflow: this code takes
            # it over as it is (its pending occurrences, runs and pause), its instances on this
            # version from now on.
            state.confirmed_at = now
            replace = False
        else:
            # This code's declaration replaces the stored one: from its next occurrence on.
            state = State(cursor=now, runs=state.runs if stored.declared else 0, confirmed_at=now)
            replace = True
    if replace:
        timing = occurrences.from_json(spec["timing"])
        paused, wake_at = False, next_wake(timing, spec, state, now)
    else:
        paused, wake_at = stored.paused, stored.wake_at
    save(state, paused=paused, wake_at=wake_at, revision=stored.revision, release=replace)


# -- starting occurrences -------------------------------------------------------------------------


def start_occurrence(
    using: str,
    schedule: WorkflowSchedule,
    at: datetime,
    *,
    definition: Workflow | None = None,
    declaration: Schedule | None = None,
) -> tuple[str, bool]:
    """Start the instance of one occurrence (idempotent: its id is `<schedule id>@<time>`).
    Returns its id, and whether this call created it. `definition` and `declaration` (the
    code's Schedule, for an input function) are looked up when not given.

    Raises WorkflowIdConflictError when an instance that this schedule did not start holds the
    id (start() refuses such ids now; older code took them)."""
    from .instances import start_instance

    if definition is None:
        definition = _definition(schedule)
    if declaration is None and schedule.declared:
        found = declared_in_code().get(schedule.pk)
        declaration = found[1] if found is not None else None
    id = occurrences.occurrence_id(schedule.pk, at)
    input = schedule.input
    if declaration is not None and callable(declaration.input):
        input = declaration.input(ScheduleOccurrence(schedule.pk, at))
    try:
        result = start_instance(
            definition,
            input,
            id=id,
            priority=schedule.spec.get("priority"),
            schedule_id=schedule.pk,
            scheduled_at=at,
            using=using,
        )
    except WorkflowIdConflictError:
        ours = WorkflowInstance.objects.using(using).filter(pk=id, schedule_id=schedule.pk)
        if not ours.exists():
            raise WorkflowIdConflictError(
                f"Instance {id!r} has the id of schedule {schedule.pk!r}'s occurrence at "
                f"{at.isoformat()}, but the schedule did not start it: the occurrence cannot "
                f"start."
            ) from None
        # Started before (with another input), by a worker whose write did not land: done.
        return id, False
    return id, result.created


def _before(timing: Timing, after: datetime, occurrence: datetime) -> datetime:
    """The occurrence just before `occurrence` (there is one after `after`)."""
    return occurrences.between(timing, after, occurrence - timedelta(milliseconds=1), 1)[-1]


def _definition(schedule: WorkflowSchedule) -> Workflow:
    return registry.resolve(schedule.workflow, schedule.version)


class Scheduler:
    """One worker's share of the schedules: those of the workflows it runs."""

    def __init__(self, using: str, owner: str, workflows: list[str], lease_duration: timedelta):
        self.using = using
        self.owner = owner
        self.workflows = workflows
        self.lease_duration = lease_duration
        self._synced_at: datetime | None = None

    def tick(self, now: datetime | None = None, *, force_sync: bool = False) -> int:
        """Sync the declared schedules once a minute, then start what is due. Returns how many
        schedules it handled."""
        now = now or clock.now()
        if force_sync or self._synced_at is None or now - self._synced_at >= CONFIRM_EVERY:
            self._synced_at = now
            sync_declared(self.using, now)
        return self.run_due(now)

    def run_due(self, now: datetime) -> int:
        handled = 0
        token = uuid.uuid4().hex
        claimed = store.claim_schedules(
            self.using,
            owner=self.owner,
            token=token,
            now=now,
            lease_until=now + self.lease_duration,
            limit=20,
            workflows=self.workflows,
        )
        for schedule in claimed:
            try:
                self._run(schedule, token, now)
            except Exception:
                logger.exception(
                    "Schedule %s failed to start its occurrences; a worker tries again once its "
                    "lease expires.",
                    schedule.pk,
                )
            handled += 1
        return handled

    def _run(self, schedule: WorkflowSchedule, token: str, now: datetime) -> None:
        declared = declared_in_code(self.workflows).get(schedule.pk) if schedule.declared else None
        if schedule.declared and declared is None:
            # Another process's code declares it: only such processes start its occurrences.
            self._hand_back(schedule, token, now, soon=self._due_within_grace(schedule, now))
            return
        registered = (
            registry.get(schedule.workflow, schedule.version)
            if schedule.version is not None
            else registry.latest(schedule.workflow)
        )
        if registered is None:
            # Pinned to a version this process does not register: leave it to one that does.
            self._hand_back(schedule, token, now, soon=self._due_within_grace(schedule, now))
            return
        try:
            store.decoded(schedule)
        except WorkflowPayloadError as error:
            logger.error(
                "Schedule %s cannot be read: %s It is left alone for a minute.", schedule.pk, error
            )
            self._hand_back(schedule, token, now)
            return
        spec = schedule.spec
        timing = timing_of(schedule)
        state = State.of(schedule)
        due = occurrences.between(timing, state.cursor, now, MISSED_MAX)
        start: list[datetime] = []
        if due:
            first_missed = occurrences.next_after(timing, state.cursor)
            missed = spec.get("missed", "skip")
            if missed == "skip":
                start = [at for at in due if now - at <= MISSED_GRACE]
            elif missed == "once":
                start = [due[-1]]
            else:
                start = list(due)
            passed = [at for at in due if at not in start]
            earlier = first_missed is not None and first_missed < due[0]  # beyond the last 100
            if passed or earlier:
                last = passed[-1] if passed else _before(timing, state.cursor, due[0])
                self._skipped(schedule, "missed", first_missed or due[0], last, now)
            state.cursor = due[-1]
        candidates = ([state.buffered] if state.buffered is not None else []) + start
        state.buffered = None
        limit = spec.get("limit")
        for at in candidates:
            if limit is not None and state.runs >= limit:
                break
            if self._overlap_allows(schedule, state, at, now):
                try:
                    start_occurrence(
                        self.using,
                        schedule,
                        at,
                        definition=registered,
                        declaration=declared[1] if declared is not None else None,
                    )
                except WorkflowIdConflictError as error:
                    logger.error("Schedule %s passes an occurrence over: %s", schedule.pk, error)
                    continue  # not started, so not counted; the next one starts as usual
                state.runs += 1
        store.write_schedule(
            self.using,
            schedule.pk,
            token,
            now=now,
            state=state.json(),
            wake_at=next_wake(timing, spec, state, now),
            release=True,
        )

    def _hand_back(
        self, schedule: WorkflowSchedule, token: str, now: datetime, *, soon: bool = False
    ) -> None:
        """Leave the schedule as it is to a process that can start it: due again in a minute,
        or `soon` (HAND_BACK_SOON)."""
        store.write_schedule(
            self.using,
            schedule.pk,
            token,
            now=now,
            state=schedule.state,
            wake_at=now + (HAND_BACK_SOON if soon else CONFIRM_EVERY),
            release=True,
        )

    @staticmethod
    def _due_within_grace(schedule: WorkflowSchedule, now: datetime) -> bool:
        """Whether an occurrence is due that missed="skip" still starts if found by now + a
        minute: handed back for a minute, it would be found too late."""
        latest = occurrences.between(timing_of(schedule), State.of(schedule).cursor, now, 1)
        return bool(latest) and now - latest[-1] <= MISSED_GRACE

    def _overlap_allows(
        self, schedule: WorkflowSchedule, state: State, at: datetime, now: datetime
    ) -> bool:
        overlap = schedule.spec.get("overlap", "skip")
        if overlap == "allow":
            return True
        # The occurrence's own instance is no overlap: a run repeated after a crash (or a lost
        # write) finds the instance it started, which start_occurrence() then counts as started.
        running = list(
            WorkflowInstance.objects.using(self.using)
            .filter(schedule_id=schedule.pk, status__in=UNFINISHED)
            .exclude(pk=occurrences.occurrence_id(schedule.pk, at))
            .values_list("id", flat=True)
        )
        if not running:
            return True
        if overlap == "skip":
            self._skipped(schedule, "overlap", at, at, now)
            return False
        if overlap == "buffer-one":
            if state.buffered is not None:
                self._skipped(schedule, "overlap", state.buffered, state.buffered, now)
            state.buffered = at
            return False
        from .client import cancel  # cancel-previous

        for id in running:
            try:
                cancel(
                    id,
                    reason=f"Cancelled by schedule {schedule.pk!r}: its next occurrence "
                    f"({occurrences.occurrence_id(schedule.pk, at)}) started.",
                    using=self.using,
                )
            except WorkflowError:
                logger.exception("Schedule %s could not cancel %s.", schedule.pk, id)
        return True

    def _skipped(
        self,
        schedule: WorkflowSchedule,
        reason: str,
        first: datetime,
        last: datetime,
        now: datetime,
    ) -> None:
        emit(
            "schedule-skipped",
            id=schedule.pk,
            workflow=schedule.workflow,
            version=schedule.version,
            at=now,
            reason=reason,
            **{"from": first, "to": last},
        )
