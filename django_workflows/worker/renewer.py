"""The worker's lease renewer: the leases of every running execution renewed in one statement
each heartbeat, and one whose row another transaction holds locked as soon as it is let go."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db import connections

from .. import clock
from ..engine.execution import Execution
from ..store import instances as store
from ..store.connections import refresh_connections

logger = logging.getLogger("django_workflows")


class LeaseRenewer:
    """Renews the leases of the executions in `running` (by instance id, read under `lock`)
    for `using`, every `heartbeat_interval`, until `ended` is set; and calls `beat` (the
    worker's registry row) once each heartbeat interval."""

    def __init__(
        self,
        *,
        using: str,
        owner: str,
        lease_duration: timedelta,
        heartbeat_interval: timedelta,
        running: dict[str, Execution],
        lock: threading.Lock,
        beat: Callable[[], None] | None = None,
    ) -> None:
        self.using = using
        self.owner = owner
        self.lease_duration = lease_duration
        self.heartbeat_interval = heartbeat_interval
        self.ended = threading.Event()  # set once the worker's shutdown timeout ends
        self._running = running
        self._lock = lock
        self._row_waiters: dict[str, threading.Thread] = {}  # by instance id: _wait_for_row
        self._beat = beat

    def run(self) -> None:
        """Renew every heartbeat until `ended` is set (the renewer thread's target)."""
        interval = self.heartbeat_interval.total_seconds()
        # On through the shutdown timeout: an execution that stops at its next ctx call then
        # still holds the lease it hands back.
        wait, failures = interval, 0
        next_beat = time.monotonic() + interval
        while not self.ended.wait(wait):
            try:
                self.renew()
                wait, failures = interval, 0
            except Exception:
                # Soon, not a heartbeat later: with the database flapping, a few failed
                # renewals in a row would otherwise let the leases of live executions lapse.
                failures += 1
                wait = min(interval, 0.1 * 2 ** min(failures - 1, 10))
                logger.exception("Renewing leases failed; trying again in %.1fs.", wait)
            finally:
                refresh_connections()
            # Once a heartbeat, not at each quick retry of a failed renewal; it never raises
            # (a failed write is logged and made again at the next heartbeat).
            if self._beat is not None and time.monotonic() >= next_beat:
                next_beat = time.monotonic() + interval
                try:
                    self._beat()
                finally:
                    refresh_connections()
        connections.close_all()

    def renew(self) -> None:
        """Renew the leases of every running execution in one statement; stop the lost ones.

        Never waits for a row lock: a row another transaction holds locked is renewed by a
        thread of its own that waits for that lock (_renew_once_unlocked)."""
        with self._lock:
            running = list(self._running.values())
        if not running:
            return
        leases = [(e.instance.id, e.lease.token) for e in running]
        started = time.monotonic()
        renewal = store.renew(self.using, leases, clock.now() + self.lease_duration)
        for execution in running:
            if execution.instance.id in renewal.busy:
                self._wait_for_row(execution)
            else:
                held(execution, renewal.flags.get(execution.instance.id), started)

    def _wait_for_row(self, execution: Execution) -> None:
        """Renew `execution`'s lease as soon as the transaction that holds its row lets go."""
        with self._lock:
            waiter = self._row_waiters.get(execution.instance.id)
            if waiter is not None and waiter.is_alive():
                return
            waiter = threading.Thread(
                target=self._renew_once_unlocked,
                args=(execution,),
                name=f"{self.owner} renewer of {execution.instance.id}",
                daemon=True,
            )
            self._row_waiters[execution.instance.id] = waiter
        waiter.start()

    def _renew_once_unlocked(self, execution: Execution) -> None:
        # Queued behind the lock, this renewal takes the row before any claim once it is free;
        # if the lease lapsed meanwhile, claims passed over the locked row all along.
        started = time.monotonic()

        def lease_until() -> Any:
            nonlocal started
            with self._lock:
                current = self._running.get(execution.instance.id) is execution
            if not current or self.ended.is_set():
                return None  # it ended meanwhile, or the worker stopped renewing
            started = time.monotonic()
            return clock.now() + self.lease_duration

        try:
            flags = store.renew_once_unlocked(
                self.using, execution.instance.id, execution.lease.token, lease_until
            )
            if not self.ended.is_set():
                held(execution, flags, started)
        except Exception:
            logger.exception(
                "Renewing the lease of instance %s once its row is unlocked failed; the next "
                "renewal tries again.",
                execution.instance.id,
            )
        finally:
            connections.close_all()


def held(execution: Execution, flags: store.LeaseFlags | None, started: float) -> None:
    """What a renewal that started at `started` (time.monotonic()) found for `execution`: its
    lease and the operator's requests, or (None) that the lease is gone; either stops its
    running steps when it must stop."""
    if flags is None:
        execution.stops.stop_reason = "lease-lost"
        for step in list(execution.stops.running_steps):
            step.cancelled.set()
        return
    execution.stops.flags = flags
    execution.lease.lease_renewed(started)  # its store calls may go on trying until then
    if flags.cancel_requested or flags.terminate_requested:
        for step in list(execution.stops.running_steps):
            step.cancelled.set()
