"""An execution's stops (`x.stops`): when a ctx call stops the workflow's code: a cancel or
terminate, the run timeout, a shutdown, a lost lease or a failing store (stop_reason),
ctx.fail(), and the instance parking (Suspend) until a timer or a signal."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from .. import errors
from ..store import instances as store
from . import journal
from .guards import Guards
from .interrupts import Cancel, HandBack, LeaseLost, ReplayEnd, RunTimeout, StoreFailed, Suspend
from .replay import Replay
from .threads import StartGate, Suspension


class RunningStep(Protocol):
    """A step attempt that runs now (stepcontext.StepContext): told of a cancel."""

    cancelled: threading.Event


class Stops:
    """The cancel flags, the stop reason and the suspension of one execution."""

    def __init__(self, guards: Guards, replay: Replay):
        self.guards = guards
        self.journal = replay
        self.instance = instance = guards.instance
        self.lock = guards.lock
        self.flags = store.LeaseFlags(
            instance.cancel_requested, instance.terminate_requested, instance.cancel_reason
        )
        self.suspension = Suspension()
        # "shutdown" or "lease-lost", set by the worker ("shutdown" also by escape());
        # "store-failed" by faults.call_store;
        # "hand-back" by an atomic step whose transaction a database fault rolled back.
        self.stop_reason: str | None = None
        # A KeyboardInterrupt (a BaseException other than SystemExit) raised by a step: the
        # execution stops, the instance is handed back, and the worker raises it again.
        self.escaped: BaseException | None = None
        # Called before the instance is handed back for a KeyboardInterrupt (escaping()): the
        # worker stops claiming first, so that it does not take the instance again itself.
        self.on_escape: Callable[[], None] | None = None
        self.running_steps: set[RunningStep] = set()
        self.gate = StartGate(self.suspension)

    def check_interrupts(self, name: str | None, entry: dict[str, Any] | None) -> None:
        """Before an operation that is not a replay: stop for a cancel, a timeout, a shutdown."""
        if self.journal.replay_only:
            raise ReplayEnd()
        if self.guards.definition_error is not None:
            raise self.guards.definition_error
        swallowed = self.guards.swallowed()
        if swallowed is not None:
            raise swallowed
        if self.stop_reason in ("lease-lost", "store-failed"):
            raise self.guards.interrupted(self.stop_interrupt())
        flags = self.flags
        deadline = self.instance.deadline
        stop: BaseException | None = None
        if flags.terminate_requested or flags.cancel_requested:
            stop = Cancel(flags.terminate_requested)
        elif deadline is not None and self.guards.now() >= deadline:
            stop = RunTimeout()
        elif self.stop_reason in ("shutdown", "hand-back"):
            raise self.guards.interrupted(HandBack())
        if stop is None:
            return
        if (
            name is not None
            and entry is not None
            and entry["status"] in (journal.PENDING, journal.RUNNING)
        ):
            self.journal.record(
                name,
                None,
                **{
                    **entry,
                    "status": journal.CANCELLED,
                    "finished_at": journal.timestamp(self.guards.now()),
                },
            )
        raise self.guards.interrupted(stop)

    def escape(self, error: BaseException) -> BaseException:
        """A step's function raised `error`, a BaseException that stops the process (a
        KeyboardInterrupt; SystemExit is an error of the attempt): not an attempt that failed.
        The execution stops (gather's other branches at their next ctx call), the instance is
        handed back due at once, and its worker raises `error` again (Worker._run)."""
        self.escaped = self.escaped or error
        self.stop_reason = self.stop_reason or "shutdown"
        return self.guards.interrupted(error)

    def escaping(self, error: BaseException | None) -> None:
        """The execution stops for `error`, a KeyboardInterrupt: tell the worker (on_escape)
        before the instance is handed back."""
        self.escaped = self.escaped or error
        if self.on_escape is not None:
            self.on_escape()

    def fail(self, message: str) -> None:
        """ctx.fail(): raise WorkflowFailedError (its compensations run), or the interrupt due."""
        self.guards.guard_step("ctx.fail()")  # in a step: raise NonRetryableStepError instead
        self.check_interrupts(None, None)
        raise errors.WorkflowFailedError(str(message), instance_id=self.instance.id)

    def stop_interrupt(self) -> BaseException:
        """What stops this execution now that `stop_reason` is set."""
        if self.stop_reason == "lease-lost":
            return LeaseLost()
        if self.stop_reason == "store-failed":
            return StoreFailed()
        return HandBack()

    def note_cancel(self, *, terminate: bool, reason: str | None) -> None:
        """A cancel or terminate was accepted: stop at the next ctx call, and tell running steps."""
        with self.lock:
            flags = self.flags
            first = terminate or not flags.cancel_requested
            self.flags = store.LeaseFlags(
                True, flags.terminate_requested or terminate, reason if first else flags.reason
            )
            steps = list(self.running_steps)
        for step in steps:
            step.cancelled.set()

    def suspend(
        self, *, wake_at: datetime | None = None, waits: list[tuple[str, str | None]] | None = None
    ) -> None:
        """Park the instance once its code stops (at `wake_at` at the latest, and at a signal
        of `waits`): raises Suspend."""
        with self.lock:
            self.suspension.pending = True
            if wake_at is not None and (
                self.suspension.wake_at is None or wake_at < self.suspension.wake_at
            ):
                self.suspension.wake_at = wake_at
            self.suspension.waits.extend(waits or [])
        raise self.guards.interrupted(Suspend())
