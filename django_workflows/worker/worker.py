"""The worker: claims due instances under a lease, runs them on a thread pool, renews the
leases of everything it runs, and hands back at shutdown those that stopped at a ctx call."""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor, wait
from datetime import datetime, timedelta
from typing import Any

from django.db import connections

from .. import clock, middleware
from ..conf import check_poll_interval, database_alias, get_settings
from ..definitions import check_queue
from ..durations import Duration, parse_duration
from ..engine.execution import Execution, leave_alone
from ..engine.registry import registry
from ..engine.starts import check_key
from ..metrics.counters import Metrics, metrics
from ..models import WorkflowInstance
from ..schedules.runner import Scheduler
from ..store import instances as store
from ..store import wakeups
from ..store.backends import backend
from ..store.connections import refresh_connections
from . import wakeups as watcher
from .heartbeat import Heartbeat
from .renewer import LeaseRenewer
from .workflows import limit_rules, scheduled_workflows

logger = logging.getLogger("django_workflows")


class Worker:
    """Runs due instances of the registered workflows (all of them, or `workflows`)."""

    def __init__(
        self,
        *,
        id: str | None = None,
        concurrency: int | None = None,
        poll_interval: Duration | None = None,
        lease_duration: Duration | None = None,
        shutdown_timeout: Duration | None = None,
        workflows: list[str] | None = None,
        using: str | None = None,
        queues: list[str] | None = None,
    ):
        defaults = get_settings().worker
        self.id = id or f"{socket.gethostname()[:200]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        check_key("id", self.id, database_alias(using))  # it is written as the lease owner
        self.concurrency = concurrency if concurrency is not None else defaults.concurrency
        if not isinstance(self.concurrency, int) or self.concurrency < 1:
            raise ValueError(f"concurrency must be a positive integer, not {self.concurrency!r}.")
        self.poll_interval = _duration(poll_interval, defaults.poll_interval, "poll_interval")
        if poll_interval is not None:
            check_poll_interval(self.poll_interval, "poll_interval")
        self.lease_duration = _duration(lease_duration, defaults.lease_duration, "lease_duration")
        if self.lease_duration <= timedelta():
            raise ValueError("lease_duration must be longer than zero.")
        # A third of the lease, unless the setting gives one for the setting's lease: a lease
        # given here replaces both.
        heartbeat = defaults.heartbeat_interval
        self.heartbeat_interval = (
            self.lease_duration / 3
            if heartbeat is None or lease_duration is not None
            else heartbeat
        )
        if not timedelta() < self.heartbeat_interval < self.lease_duration:
            raise ValueError(
                f"WORKER['HEARTBEAT_INTERVAL'] ({self.heartbeat_interval}) must be longer than "
                f"zero and shorter than the lease duration ({self.lease_duration}), which runs "
                f"out unless renewed in time."
            )
        self.shutdown_timeout = _duration(
            shutdown_timeout, defaults.shutdown_timeout, "shutdown_timeout"
        )
        self.workflows = list(workflows) if workflows else None
        # The queues it claims from; None for every queue.
        if isinstance(queues, str) or not isinstance(queues, list | tuple | type(None)):
            raise TypeError(f"queues must be a list of queue names, not {type(queues).__name__}.")
        self.queues = list(queues) if queues else None
        for queue in self.queues or []:
            check_queue(queue, "A worker's queue")
        for name in self.workflows or []:
            registry.resolve(name)  # WorkflowNotFoundError names what is registered
        self.concurrency_rules, self.rate_rules = limit_rules(self.workflows)
        self._stopping = threading.Event()
        self.scheduler = Scheduler(
            database_alias(using),
            self.id,
            scheduled_workflows(self.workflows, self.queues),
            self.lease_duration,
            stopping=self._stopping,
        )
        self.using = database_alias(using)
        self._wake = threading.Event()  # a start, a signal or a stop: look for work now
        self._freed = threading.Event()  # an execution ended: a slot is free
        self._lock = threading.Lock()
        self._running: dict[str, Execution] = {}
        self._ended = 0  # executions ended since it started (its registry row's `executed`)
        self._rides = 0  # instances leased by a claim that rode on a release (_ride())
        # Claims not answered yet (token, lease end); the next claim hands them back (_claim).
        self._unanswered: list[tuple[str, datetime]] = []
        # A KeyboardInterrupt an execution of the pool let out: run() raises it once stopped.
        self._escaped: BaseException | None = None
        # Its row in the registry of workers, while run() or run_until_idle() serves.
        self._heartbeat = Heartbeat(
            using=self.using,
            id=self.id,
            queues=list(self.queues or []),
            workflows=[f"{n}@{v}" for n, v in registry.pairs(self.workflows)]
            if self.workflows
            else [],
            concurrency=self.concurrency,
            heartbeat=self.heartbeat_interval.total_seconds(),
            counts=self._counts,
        )
        self._renewer = LeaseRenewer(
            using=self.using,
            owner=self.id,
            lease_duration=self.lease_duration,
            heartbeat_interval=self.heartbeat_interval,
            running=self._running,
            lock=self._lock,
            beat=self._heartbeat.beat,
        )
        self.left_behind: list[str] = []  # instances still inside a step when run() returned
        # This process's counters while METRICS is on: the worker times its claims.
        self._metrics: Metrics | None = metrics() if get_settings().metrics else None

    # -- claiming and executing ------------------------------------------------------------------

    def _claim(self, limit: int) -> tuple[list[WorkflowInstance], store.Claim, str]:
        while self._unanswered:  # a claim whose connection broke may have committed anyway
            store.hand_back(self.using, *self._unanswered[0])
            self._unanswered.pop(0)
        token, now = uuid.uuid4().hex, clock.now()
        self._unanswered.append((token, now + self.lease_duration))
        started = time.perf_counter()
        claim = store.claim(
            self.using,
            owner=self.id,
            token=token,
            now=now,
            lease_until=self._unanswered[-1][1],
            limit=limit,
            workflows=registry.pairs(self.workflows),
            concurrency=self.concurrency_rules,
            rates=self.rate_rules,
            queues=self.queues,
            # The headers start() stored, for STEP_MIDDLEWARE's process_execution().
            first_journals=bool(middleware.chain().executions),
        )
        if self._metrics is not None:
            self._metrics.claim(time.perf_counter() - started)
        self._unanswered.pop()
        return claim.instances, claim, token

    def _ride(self) -> store.Ride | None:
        """The claim to ride on an execution's release (store.Ride), where the database can:
        without limits only (a claim under limits counts and locks what a ride does not), and
        never once the worker stops."""
        if (
            not backend(self.using).has_rides
            or self.concurrency_rules
            or self.rate_rules
            or self._stopping.is_set()
        ):
            return None
        return store.Ride(
            owner=self.id,
            token=uuid.uuid4().hex,
            lease_duration=self.lease_duration,
            workflows=registry.pairs(self.workflows),
            queues=sorted(set(self.queues)) if self.queues is not None else None,
            first_journals=bool(middleware.chain().executions),
        )

    def _execute(
        self, instance: WorkflowInstance, claim: store.Claim, token: str, propagate: bool = False
    ) -> str:
        """Run one claimed instance; what became of it. A KeyboardInterrupt that its code (or a
        step's function) raised is raised again once the instance is handed back: with
        `propagate` (drain()) here; in the pool, by run() once the worker has stopped."""
        return self._run(instance, claim, token, propagate)[0]

    def _run(
        self,
        instance: WorkflowInstance,
        claim: store.Claim,
        token: str,
        propagate: bool = False,
        ride: bool = False,
    ) -> tuple[str, store.Claim | None]:
        """_execute(); with `ride`, a claim rides on the instance's release (_ride()): what
        became of it, and the claim that rode (None if nothing was leased)."""
        definition = registry.get(instance.workflow, instance.version)
        if definition is None:  # unregistered since the claim: leave it to its lease
            return "unregistered", None
        unreadable = claim.unreadable.get(instance.id)
        if unreadable is not None:
            return leave_alone(self.using, instance, token, unreadable), None
        execution: Execution | None = None
        try:
            execution = Execution(
                instance,
                definition,
                using=self.using,
                token=token,
                last_signal_id=claim.last_signal_id,
                lease_duration=self.lease_duration,
                journal_entries=claim.journals.get(instance.id, []),
            )
            if ride:
                execution.lease.ride = self._ride()
            # A KeyboardInterrupt stops the worker's claims before the instance is handed back.
            execution.stops.on_escape = self.stop
            with self._lock:
                self._running[instance.id] = execution
                if self._stopping.is_set():
                    execution.stops.stop_reason = "shutdown"
            try:
                outcome = middleware.run_execution(
                    instance, execution.journal.entries, execution.execute
                )
            finally:
                with self._lock:
                    self._running.pop(instance.id, None)
            if execution.stops.escaped is not None:  # handed back: now it stops this worker
                raise execution.stops.escaped
            return outcome, execution.lease.rode
        except Exception:
            logger.exception(
                "Instance %s (%s@%s) stopped with an unexpected error; it runs again once its "
                "lease expires.",
                instance.id,
                instance.workflow,
                instance.version,
            )
            return "error", None if execution is None else execution.lease.rode
        except BaseException as error:  # a KeyboardInterrupt: the instance is handed back
            if propagate:
                raise
            logger.error(
                "Worker %s stops: instance %s (%s@%s) raised %s.",
                self.id,
                instance.id,
                instance.workflow,
                instance.version,
                type(error).__name__,
            )
            with self._lock:
                self._escaped = self._escaped or error
            self.stop()  # run() raises it again once the worker has stopped
            return "interrupted", None

    def drain(self) -> int:
        """Run every due instance, in this thread, until none is left that can start, and start
        the occurrences of schedules that the clock passed.

        Returns how many executions it ran.
        """
        executed = 0
        while not self._stopping.is_set():
            instances, claim, token = self._claim(1)
            if not instances:
                # Then the schedule occurrences the clock passed (with the instances that were
                # due run first, an overlap sees the ones that ended by now as ended).
                if self.scheduler.tick():
                    continue
                return executed
            for instance in instances:
                self._execute(instance, claim, token, propagate=True)
                executed += 1
        return executed

    # -- the loop --------------------------------------------------------------------------------

    def run(self) -> None:
        """Poll, claim and execute until stop() is called; then hand back what stopped at a ctx
        call within the shutdown timeout, and leave what is still inside a step to its lease."""
        self._serve(until_idle=False)

    def run_until_idle(self) -> int:
        """As run(), on the thread pool with its batched claims and lease renewals, until
        nothing is due that can start, no schedule occurrence the clock passed is left to start,
        and every execution has ended (runworkflows --once); or until stop() is called.

        Returns how many executions it ran. drain() does the same in the calling thread, one
        instance at a time."""
        return self._serve(until_idle=True)

    def _serve(self, *, until_idle: bool) -> int:
        database = backend(self.using)
        database.prepare_worker()
        logger.info(
            "Worker %s runs %s from %s on %s (concurrency %d, poll %s, lease %s%s).",
            self.id,
            ", ".join(f"{n}@{v}" for n, v in registry.pairs(self.workflows)) or "nothing",
            f"queue(s) {', '.join(sorted(set(self.queues)))}" if self.queues else "every queue",
            database.connection.vendor,
            self.concurrency,
            self.poll_interval,
            self.lease_duration,
            ", until idle" if until_idle else "",
        )
        if database.serializes_writes:
            logger.info("On SQLite, run one worker process: SQLite serializes writers.")
        wakeups.subscribe(self._wake)
        self._heartbeat.register()
        renewer = threading.Thread(target=self._renewer.run, name=f"{self.id} renewer", daemon=True)
        renewer.start()
        listener = None
        if database.has_listen_notify and not until_idle:
            listener = threading.Thread(
                target=database.listen,
                args=(lambda payload: self._wake.set(), self._stopping),
                name=f"{self.id} listener",
                daemon=True,
            )
            listener.start()
        elif not until_idle:  # no notifications: watch the wake-up counters
            listener = watcher.start_watcher(
                self.using,
                self._wake.set,
                self._stopping,
                get_settings().worker.wakeup_interval,
                name=f"{self.id} wake-up watcher",
            )
        ticker = None
        if not until_idle:  # a long tick (many schedules due at once) holds back no claim
            ticker = threading.Thread(
                target=self.scheduler.serve, args=(self._poll_wait,), name=f"{self.id} schedules"
            )
            ticker.start()
        futures: set[Future[Any]] = set()
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="workflow")
        # With a backlog (the last claim filled every free slot), claim again once a batch of
        # slots is free: one claim per few executions rather than one per execution.
        batch = max(1, self.concurrency // 2)
        backlog = True
        scheduled_at = 0.0
        executed = 0
        with self._lock:
            rides = self._rides
        try:
            while not self._stopping.is_set():
                if (
                    until_idle
                    and time.monotonic() - scheduled_at >= self.poll_interval.total_seconds()
                ):
                    scheduled_at = time.monotonic()
                    self.scheduler.tick_logged()
                futures = {f for f in futures if not f.done()}
                free = self.concurrency - len(futures)
                if free > 0:
                    try:
                        refresh_connections()
                        instances, claim, token = self._claim(free)
                    except Exception:
                        logger.exception("Claiming due instances failed; trying again.")
                        instances, claim, token = [], store.Claim([], 0), ""
                        free = -1  # not known to be idle
                    for instance in instances:
                        futures.add(pool.submit(self._execute_in_pool, instance, claim, token))
                    executed += len(instances)
                    backlog = len(instances) == free
                    if until_idle and free == self.concurrency and not instances:
                        # Idle: then the schedule occurrences the clock passed, as drain() does.
                        if self.scheduler.tick():
                            continue
                        break
                if backlog:
                    self._wait_for_slots(futures, batch)
                elif until_idle:  # what ends can make more due: a parent, a buffered occurrence
                    self._freed.wait(self._poll_wait())
                    self._freed.clear()
                else:
                    self._wake.wait(self._poll_wait())
                    self._wake.clear()
        finally:
            wakeups.unsubscribe(self._wake)
            self._shut_down(pool, futures)
            if ticker is not None:
                ticker.join()
            if listener is not None:
                listener.join(2)  # it checks for the stop once a second, then closes its connection
            self._heartbeat.unregister()  # a clean exit: no longer in the registry
        with self._lock:  # and those that rode on a release
            escaped = self._escaped
            if escaped is not None:
                raise escaped
            return executed + self._rides - rides

    def _wait_for_slots(self, futures: set[Future[Any]], batch: int) -> None:
        """Until `batch` slots are free, or a little while with at least one free."""
        started = time.monotonic()
        while not self._stopping.is_set():
            free = self.concurrency - sum(1 for f in futures if not f.done())
            if free >= batch or (free and time.monotonic() - started > 0.05):
                return
            self._freed.wait(0.05)
            self._freed.clear()

    def _counts(self) -> tuple[int, int]:
        """(executions running now, executions ended so far), for the registry row."""
        with self._lock:
            return len(self._running), self._ended

    def _execute_in_pool(self, instance: WorkflowInstance, claim: store.Claim, token: str) -> str:
        """Run a claimed instance on this pool thread, then each instance a claim that rode on
        the previous one's release leased: the slot stays taken, and no claim of the loop's
        is needed for it."""
        refresh_connections()
        try:
            while True:
                outcome, rode = self._run(instance, claim, token, ride=True)
                if rode is None or not rode.instances:
                    return outcome
                with self._lock:
                    self._ended += 1
                    self._rides += 1
                instance, claim = rode.instances[0], rode
                token = instance.lease_token or ""
                refresh_connections()
        finally:
            with self._lock:
                self._ended += 1
            if self._stopping.is_set():
                # Past the shutdown's own closing of the pool's connections (a step that
                # outlasted the shutdown timeout): close this thread's before the pool lets it go.
                connections.close_all()
            else:
                refresh_connections()
            self._freed.set()  # a slot is free

    def _poll_wait(self) -> float:
        # A little jitter, so many workers do not poll in step.
        seconds = self.poll_interval.total_seconds()
        return seconds * random.uniform(0.9, 1.1)

    # -- stopping --------------------------------------------------------------------------------

    def stop(self, timeout: Duration | None = None) -> None:
        """Stop claiming, cancel running steps, and let run() hand back the instances that stop
        at their next ctx call within the shutdown timeout."""
        if timeout is not None:
            self.shutdown_timeout = parse_duration(timeout, "timeout")
        self._stopping.set()
        self._wake.set()
        with self._lock:
            for execution in self._running.values():
                if execution.stops.stop_reason is None:
                    execution.stops.stop_reason = "shutdown"
                for step in list(execution.stops.running_steps):
                    step.cancelled.set()

    def _shut_down(self, pool: ThreadPoolExecutor, futures: set[Future[Any]]) -> None:
        self.stop()
        pending = {f for f in futures if not f.done()}
        if pending:
            wait(pending, timeout=self.shutdown_timeout.total_seconds())
        # Those still inside a step keep their lease, no longer renewed: their step may still
        # run (Python cannot stop its thread), so handing them back would run it twice at once.
        # Once the lease expires, another worker runs them again, as after a crash.
        self._renewer.ended.set()
        with self._lock:
            left = list(self._running.values())
        self.left_behind = [execution.instance.id for execution in left]
        if left:
            logger.warning(
                "Worker %s stopped with %d instance(s) still inside a step after its shutdown "
                "timeout, left to their lease (no longer renewed): %s.",
                self.id,
                len(left),
                ", ".join(self.left_behind),
            )
        # Each pool thread closes its connection before the pool lets it go.
        # (A barrier spreads the closers over every thread; one still busy keeps its own.)
        meet = threading.Barrier(self.concurrency)
        try:
            idle = [pool.submit(_close_connections, meet) for _ in range(self.concurrency)]
            wait(idle, timeout=2)
        except RuntimeError:  # the interpreter is exiting: its threads and connections go with it
            pass
        pool.shutdown(wait=False, cancel_futures=True)
        logger.info("Worker %s stopped.", self.id)


def _duration(value: Duration | None, default: timedelta, what: str) -> timedelta:
    return default if value is None else parse_duration(value, what)


def _close_connections(meet: threading.Barrier) -> None:
    try:
        meet.wait(timeout=1)
    except threading.BrokenBarrierError:
        pass
    connections.close_all()


def drain(*, using: str | None = None) -> int:
    """Run every due instance in this thread until none is left that can start; how many ran."""
    return Worker(using=using).drain()
