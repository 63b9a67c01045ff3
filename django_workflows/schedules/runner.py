"""A worker's share of the schedules, those of the workflows it runs: it claims the due ones under
a lease, starts their occurrences as `missed` and `overlap` say, then writes their new state and
hands them back. Once a minute it first syncs the declared schedules.

A claimed batch's common case is planned, then written together (batch.py); the rest, one
schedule at a time, each in a savepoint of its own (Scheduler._run). Between ticks, a worker's
schedules thread prepares the occurrences coming due, and a tick first writes those due
(ahead.py).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta

from django.db import connections, transaction

from .. import clock
from ..client.instances import cancel
from ..definitions import Schedule, Workflow
from ..errors import WorkflowError, WorkflowIdConflictError, WorkflowPayloadError
from ..models import WorkflowSchedule
from ..store import schedules as store
from ..store.connections import refresh_connections
from . import batch
from .ahead import PREPARE_EVERY, Ahead
from .declared import CONFIRM_EVERY, declared_in_code, sync_declared
from .ids import occurrence_id
from .start import start_occurrence
from .state import State, next_wake, timing_of

logger = logging.getLogger("django_workflows")

# Schedules claimed at a time: a tick claims batches until one comes back short.
CLAIM_BATCH = 100
# Schedules started one at a time per transaction (those batch.py leaves, or a whole batch whose
# write failed): a commit per 10 rather than 2 per schedule, while the transaction stays short
# (on SQLite it holds the one write lock the executions wait for).
PER_TRANSACTION = 10


class Scheduler:
    """One worker's share of the schedules: those of the workflows it runs."""

    def __init__(
        self,
        using: str,
        owner: str,
        workflows: list[str],
        lease_duration: timedelta,
        *,
        stopping: threading.Event | None = None,
    ):
        self.using = using
        self.stopping = stopping or threading.Event()  # set: no further claim in this tick
        self.owner = owner
        self.workflows = workflows
        self.lease_duration = lease_duration
        self.ahead = Ahead(using, workflows)
        self._synced_at: datetime | None = None

    def tick(self, now: datetime | None = None, *, force_sync: bool = False) -> int:
        """Write the occurrences prepared ahead that are due, sync the declared schedules once a
        minute, then start what is due. Returns how many schedules it handled."""
        now = now or clock.now()
        # First: a confirmation of the declared schedules moves their revisions on.
        written = self.ahead.write_due(now)
        if force_sync or self._synced_at is None or now - self._synced_at >= CONFIRM_EVERY:
            self._synced_at = now
            sync_declared(self.using, now)
        return written + self.run_due(now)

    def serve(self, poll_wait: Callable[[], float]) -> None:
        """A worker's schedules thread, until `stopping`: a tick once a poll interval
        (`poll_wait()` seconds, or PREPARE_EVERY if shorter) and at the time of the soonest
        occurrence prepared, and the occurrences coming due prepared (ahead.py) after a tick
        that handled some, else once every PREPARE_EVERY: an idle tick reads nothing more than
        its claim."""
        prepared_at: float | None = None  # time.monotonic() of the last preparation
        more = False
        try:
            while not self.stopping.is_set():
                handled = self.tick_logged()
                if (
                    handled
                    or more
                    or prepared_at is None
                    or time.monotonic() - prepared_at >= PREPARE_EVERY.total_seconds()
                ):
                    prepared_at = time.monotonic()
                    more = self._prepare()
                self.stopping.wait(0 if more else self._wait(poll_wait()))
        finally:
            connections[self.using].close()

    def tick_logged(self) -> int:
        """tick() from a worker's loop: a failure is logged (0 handled), and the next poll tries
        again."""
        try:
            refresh_connections()
            return self.tick()
        except Exception:
            logger.exception("Starting schedule occurrences failed; trying again at the next poll.")
            return 0

    def _prepare(self) -> bool:
        """ahead.prepare(): whether more are left to plan; a failure is logged."""
        try:
            return self.ahead.prepare(clock.now(), declared_in_code(self.workflows))
        except Exception:
            logger.exception("Preparing schedule occurrences failed; the tick starts them.")
            return False

    def _wait(self, poll: float) -> float:
        """Seconds until the next tick: the poll interval, or PREPARE_EVERY if shorter, or the
        time of the soonest occurrence prepared if sooner."""
        wait = min(poll, PREPARE_EVERY.total_seconds())
        soonest = self.ahead.next_at()
        if soonest is not None:
            wait = min(wait, max(0.0, (soonest - clock.now()).total_seconds()))
        return wait

    def run_due(self, now: datetime) -> int:
        """Start what is due: claims of CLAIM_BATCH schedules, one after another while they come
        back full, for up to half a lease (then the next tick goes on from a new now)."""
        handled = 0
        began = clock.now()
        while True:
            claimed = self._run_batch(now)
            handled += claimed
            if (
                claimed < CLAIM_BATCH
                or clock.now() - began >= self.lease_duration / 2
                or self.stopping.is_set()
            ):
                return handled

    def _run_batch(self, now: datetime) -> int:
        token = uuid.uuid4().hex
        claimed = store.claim_schedules(
            self.using,
            owner=self.owner,
            token=token,
            now=now,
            lease_until=now + self.lease_duration,
            limit=CLAIM_BATCH,
            workflows=self.workflows,
        )
        if not claimed:
            return 0
        declared = declared_in_code(self.workflows)
        running = store.running_instances(
            self.using,
            [schedule.pk for schedule in claimed if schedule.spec.get("overlap") != "allow"],
        )
        alone = self._run_planned(claimed, token, now, declared, running)
        for first in range(0, len(alone), PER_TRANSACTION):
            with store.batch_transaction(self.using):
                for schedule in alone[first : first + PER_TRANSACTION]:
                    try:
                        with transaction.atomic(using=self.using):  # a savepoint: this one alone
                            self._run(schedule, token, now, declared, running.get(schedule.pk, []))
                    except Exception:
                        logger.exception(
                            "Schedule %s failed to start its occurrences; a worker tries again "
                            "once its lease expires.",
                            schedule.pk,
                        )
        return len(claimed)

    def _run_planned(
        self,
        claimed: list[WorkflowSchedule],
        token: str,
        now: datetime,
        in_code: dict[str, tuple[Workflow, Schedule]],
        running: dict[str, list[str]],
    ) -> list[WorkflowSchedule]:
        """Plan the claimed schedules, and write those planned in one transaction (batch.py).
        Returns the schedules left to the per-schedule path: those without a plan, or all of
        them when the batch's write failed (then it wrote nothing)."""
        plans: list[batch.Plan] = []
        alone: list[WorkflowSchedule] = []
        for schedule in claimed:
            try:
                planned = batch.plan(
                    self.using, schedule, now, in_code, list(running.get(schedule.pk, []))
                )
            except Exception:
                planned = None  # the per-schedule path meets the error again, and logs it
            if planned is None:
                alone.append(schedule)
            else:
                plans.append(planned)
        if not plans:
            return alone
        try:
            with store.batch_transaction(self.using):
                batch.write(self.using, token, now, plans)
        except batch.IdTaken:
            logger.info(
                "An occurrence of a batch of schedules has its instance already: each "
                "schedule of the batch starts its occurrences alone."
            )
            return claimed
        except Exception:
            logger.exception(
                "A batch of %d schedules failed to start its occurrences; each starts them alone.",
                len(plans),
            )
            return claimed
        for planned in plans:
            for skipped in planned.skipped:
                batch.skipped_event(planned.schedule, skipped, now)
        return alone

    def _run(
        self,
        schedule: WorkflowSchedule,
        token: str,
        now: datetime,
        in_code: dict[str, tuple[Workflow, Schedule]],
        running: list[str],
    ) -> None:
        """Start the schedule's due occurrences. `in_code`: the schedules this code declares;
        `running`: its unfinished instances as read for its batch."""
        declared = in_code.get(schedule.pk) if schedule.declared else None
        if schedule.declared and declared is None:
            # Another process's code declares it: only such processes start its timings.
            self._hand_back(schedule, token, now, soon=batch.due_within_grace(schedule, now))
            return
        registered = batch.definition_of(schedule)
        if registered is None:
            # Pinned to a version this process does not register: leave it to one that does.
            self._hand_back(schedule, token, now, soon=batch.due_within_grace(schedule, now))
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
        start, missed = batch.due_starts(timing, spec, state, now)
        if missed is not None:
            batch.skipped_event(schedule, missed, now)
        candidates = ([state.buffered] if state.buffered is not None else []) + start
        state.buffered = None
        limit = spec.get("limit")
        for at in candidates:
            if limit is not None and state.runs >= limit:
                break
            if self._overlap_allows(schedule, state, at, now, running):
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
                running.append(occurrence_id(schedule.pk, at))  # unfinished from now on
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
            wake_at=batch.hand_back_wake(schedule, now, soon=soon),
            release=True,
        )

    def _overlap_allows(
        self,
        schedule: WorkflowSchedule,
        state: State,
        at: datetime,
        now: datetime,
        unfinished: list[str],
    ) -> bool:
        overlap = schedule.spec.get("overlap", "skip")
        if overlap == "allow":
            return True
        # The occurrence's own instance is no overlap: a run repeated after a crash (or a lost
        # write) finds the instance it started, which start_occurrence() then counts as started.
        own = occurrence_id(schedule.pk, at)
        running = [id for id in unfinished if id != own]
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
        # cancel-previous
        for id in running:
            try:
                cancel(
                    id,
                    reason=f"Cancelled by schedule {schedule.pk!r}: its next occurrence "
                    f"({occurrence_id(schedule.pk, at)}) started.",
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
        batch.skipped_event(schedule, (reason, first, last), now)
