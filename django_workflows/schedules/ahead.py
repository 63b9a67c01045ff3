"""Occurrences prepared ahead of their time, written at it.

Ten thousand schedules `every="1m"` fall due on the same second, and planning and encoding each
occurrence's instance costs a worker's interpreter more than its share of that second. So a
worker's schedules thread, between ticks, reads the schedules coming due within HORIZON (a read,
no lease), plans each as its tick would at its time (batch.plan()), and prepares the instance's
row for the database; nothing is written then. At the time, one transaction takes the
schedules whose plans still hold and inserts their instances, stamped with that time.

A plan holds while its schedule is the row it was read from, at the revision read then (every
write moves it on: a pause, an upsert, a removal, another worker's tick; a schedule removed and
saved again, at revision 1 again, is told by its creation time), not paused, held by no live lease, and has
no unfinished instance in the way of `overlap`; and while the clock is still before the
schedule's next occurrence and within `missed="skip"`'s minute, so that its tick at this time
would plan the same. What does not hold is left, not written: the tick's claim then starts it
as it would have without a plan. Only the common case is prepared (one occurrence to start,
none passed over); the rest waits for the tick.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..definitions import Schedule, Workflow
from ..engine.starts import wake_on_commit
from ..models import WorkflowSchedule
from ..store import ahead as store
from ..store import schedules as schedule_store
from ..store.backends.ahead import Take
from .batch import MISSED_GRACE, plan

logger = logging.getLogger("django_workflows")

HORIZON = timedelta(seconds=15)  # how far ahead of their time occurrences are prepared
# The schedules thread prepares at least this often, whatever the poll interval.
PREPARE_EVERY = HORIZON / 3
PREPARE_BATCH = 1_000  # schedules read and planned at a time, between ticks
WRITE_BATCH = 10_000  # prepared occurrences written in one transaction


@dataclass
class Prepared:
    """One schedule's occurrence, planned and its instance's row prepared."""

    schedule_id: str
    stored: tuple[int, datetime]  # the row as read: its revision and creation time
    at: datetime  # the occurrence
    until: datetime  # the plan holds before then
    take: Take  # the schedule's write
    instance: store.PreparedInstance


class Ahead:
    """A worker's occurrences prepared ahead of their time, by schedule id."""

    def __init__(self, using: str, workflows: list[str]):
        self.using = using
        self.workflows = workflows
        self.prepared: dict[str, Prepared] = {}
        # Schedules read but not prepared (not the common case), by id: the row as read.
        self.declined: dict[str, tuple[int, datetime]] = {}

    def next_at(self) -> datetime | None:
        """The soonest time a prepared occurrence is due."""
        return min((p.at for p in self.prepared.values()), default=None)

    def prepare(self, now: datetime, in_code: dict[str, tuple[Workflow, Schedule]]) -> bool:
        """Plan up to PREPARE_BATCH schedules coming due within HORIZON that have no plan of
        their row as it is, and forget the plans of the others (but those due by `now`, for
        the next tick). Returns whether more are left to plan."""
        if not self.workflows:
            return False
        coming = store.coming_due(self.using, self.workflows, now, now + HORIZON)
        # A schedule removed and saved again starts at revision 1 again: its creation time
        # tells the rows apart. Plans due by now are kept for the tick to write.
        stored = {id: (revision, created_at) for id, revision, created_at in coming}
        self.prepared = {
            id: p for id, p in self.prepared.items() if stored.get(id) == p.stored or p.at <= now
        }
        self.declined = {id: s for id, s in self.declined.items() if stored.get(id) == s}
        missing = [id for id in stored if id not in self.prepared and id not in self.declined]
        for schedule in store.schedules(self.using, missing[:PREPARE_BATCH]):
            try:
                prepared = self._plan(schedule, in_code)
            except Exception:
                prepared = None  # the tick meets the error again at the time, and logs it
            if prepared is None:
                self.declined[schedule.pk] = (schedule.revision, schedule.created_at)
            else:
                self.prepared[schedule.pk] = prepared
        return len(missing) > PREPARE_BATCH

    def _plan(
        self, schedule: WorkflowSchedule, in_code: dict[str, tuple[Workflow, Schedule]]
    ) -> Prepared | None:
        at = schedule.wake_at
        assert at is not None
        planned = plan(self.using, schedule, at, in_code, [])
        if planned is None or planned.new is None or planned.skipped:
            return None
        new = planned.new
        if new.instance.scheduled_at != at or (planned.state or {}).get("buffered"):
            return None
        until = at + MISSED_GRACE
        if planned.wake_at is not None:
            until = min(until, planned.wake_at)
        instance = store.prepare_instance(
            self.using, new.instance, new.tags, new.attributes, new.entries
        )
        take = store.prepare_take(
            self.using,
            schedule,
            schedule.spec.get("overlap", "skip") != "allow",
            new.instance.pk,
            planned.state,
            planned.wake_at,
        )
        stored = (schedule.revision, schedule.created_at)
        return Prepared(schedule.pk, stored, at, until, take, instance)

    def write_due(self, now: datetime) -> int:
        """Write the prepared occurrences due by `now` whose plans still hold, WRITE_BATCH in
        a transaction; forget those that do not (the tick starts them). Returns how many
        occurrences it started."""
        due = sorted(
            (p for p in self.prepared.values() if p.at <= now), key=lambda p: (p.at, p.schedule_id)
        )
        for prepared in due:
            del self.prepared[prepared.schedule_id]
        started = 0
        for first in range(0, len(due), WRITE_BATCH):
            batch = [p for p in due[first : first + WRITE_BATCH] if now < p.until]
            started += self._write(batch, now)
        return started

    def _write(self, due: list[Prepared], now: datetime) -> int:
        if not due:
            return 0
        try:
            with schedule_store.batch_transaction(self.using):
                started = store.create_prepared(
                    self.using,
                    now,
                    [p.take for p in due],
                    {p.schedule_id: p.instance for p in due},
                )
                if started:
                    wake_on_commit(self.using)
        except Exception:
            logger.exception(
                "Writing %d occurrences prepared ahead failed; the tick starts them.", len(due)
            )
            return 0
        if started < len(due):
            logger.debug(
                "%d of %d occurrences prepared ahead were not written (their schedules changed, "
                "or an instance was in the way): the tick starts them.",
                len(due) - started,
                len(due),
            )
        return started
