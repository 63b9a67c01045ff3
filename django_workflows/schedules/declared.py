"""The schedules declared in code (`@workflow(schedules=[Schedule(...)])`): every worker saves
the ones its code declares, confirms them once a minute, and deletes those that no process's code
has confirmed for five minutes. A process mid-deploy with older code changes nothing a newer one
saved.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from .. import clock
from ..definitions import Schedule, Workflow
from ..engine.registry import registry
from ..models import WorkflowSchedule
from ..store import schedules as store
from . import timing as timings
from .state import State, next_wake, read_time, spec_of

logger = logging.getLogger("django_workflows")

CONFIRM_EVERY = timedelta(minutes=1)
STALE_AFTER = timedelta(minutes=5)  # a declared schedule nobody confirmed for this long goes


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
    timing = timings.timing(
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
    spec = _declared_spec(schedule, read_time(anchor) or now)

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
        wake_at = next_wake(timings.from_json(spec["timing"]), spec, state, now)
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
        timing = timings.from_json(spec["timing"])
        paused, wake_at = False, next_wake(timing, spec, state, now)
    else:
        paused, wake_at = stored.paused, stored.wake_at
    save(state, paused=paused, wake_at=wake_at, revision=stored.revision, release=replace)
