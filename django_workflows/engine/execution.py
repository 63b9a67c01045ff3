"""One execution of one claimed instance, composed of its parts (guards.py, replay.py, stops.py,
lease.py): run it forward, park it, end it, or undo it."""

from __future__ import annotations

import copy
import logging
import sys
from datetime import datetime, timedelta
from typing import Any

from .. import clock, errors
from ..definitions import Workflow
from ..models import Status, WorkflowInstance
from ..store import instances as store
from ..store import schedules as schedules_store
from ..store import wakeups
from . import children, compensations, continuation, journal
from .context import WorkflowContext
from .guards import Guards
from .interrupts import (
    Cancel,
    ContinueAsNew,
    HandBack,
    JournalFull,
    LeaseLost,
    ReplayEnd,
    RunTimeout,
    StoreFailed,
    Suspend,
    Unreadable,
)
from .lease import Lease
from .registry import registry
from .replay import Replay
from .stops import Stops
from .surface import Compensation

logger = logging.getLogger("django_workflows")

_FINAL_EVENTS: dict[str, str] = {
    Status.COMPLETED: "workflow-completed",
    Status.FAILED: "workflow-failed",
    Status.CANCELLED: "workflow-cancelled",
    Status.COMPENSATION_FAILED: "workflow-compensation-failed",
}


class Execution:
    """Runs one claimed instance until it parks, ends, or loses its lease: the surface.Ending
    the ctx concerns see, its state held by its parts."""

    def __init__(
        self,
        instance: WorkflowInstance,
        definition: Workflow,
        *,
        using: str,
        token: str,
        last_signal_id: int,
        lease_duration: timedelta,
        journal_entries: list[tuple[str, dict[str, Any]]] | None = None,
    ):
        if journal_entries is None:  # a first execution has none; a claim reads the others'
            journal_entries = [] if instance.runs <= 1 else store.load_journal(using, instance.id)
        self.guards = guards = Guards(instance, definition, using=using)
        self.journal = replay = Replay(guards, journal_entries)
        self.stops = stops = Stops(guards, replay)
        self.lease = Lease(
            guards,
            replay,
            stops,
            token=token,
            last_signal_id=last_signal_id,
            lease_duration=lease_duration,
        )
        self.instance = instance
        self.definition = definition
        self.using = using
        self.lock = guards.lock
        self.local = guards.local
        self.compensations: list[Compensation] = []  # see compensations.py

    def resolve(self, workflow: Any, version: int | None) -> Workflow:
        """registry.resolve(): the definition a child or a continue-as-new runs."""
        return registry.resolve(workflow, version)

    def note_cancel(self, *, terminate: bool, reason: str | None) -> None:
        """A cancel or terminate of the instance was accepted (store.wakeups tells it)."""
        self.stops.note_cancel(terminate=terminate, reason=reason)

    @property
    def had_waits(self) -> bool:
        # Waits are registered only by a release: a first execution has none to clear.
        return self.instance.runs > 1

    def execute(self) -> str:
        """Run the instance; returns what became of it: a status, "handed-back" or "lease-lost"."""
        first = self.instance.runs <= 1 and self.instance.status == Status.RUNNING
        if first:
            self.guards.emit("workflow-started")
        else:
            self.guards.emit("workflow-resumed", run=self.instance.runs)
        wakeups.track(self.instance.id, self)
        try:
            if self.instance.status == Status.COMPENSATING:
                return self._resume_undo()
            return self._run_forward()
        except LeaseLost:
            logger.warning(
                "Instance %s lost its lease; its execution stopped without writing.",
                self.instance.id,
            )
            return "lease-lost"
        except StoreFailed:
            return "store-failed"  # logged by faults.call_store
        except Unreadable as unreadable:
            return self._leave_alone(unreadable.error)
        except HandBack:
            return self._hand_back()
        except BaseException:
            # Not the engine's (Exception and SystemExit are the workflow's, handled in
            # _run_forward): a KeyboardInterrupt. Release the instance before it propagates.
            self._release_after(sys.exc_info()[1])
            raise
        finally:
            wakeups.untrack(self.instance.id, self)

    # -- forward -------------------------------------------------------------------------------

    def _run_forward(self) -> str:
        ctx = WorkflowContext(self)
        try:
            output = self._run_definition(ctx)
        except (LeaseLost, HandBack, StoreFailed):
            raise
        except Suspend:
            if self.guards.definition_error is not None:
                return self._fail_definition()
            return self._park()
        except Cancel as cancel:
            return compensations.undo(self, self.cancel_error(cancel.terminate))
        except ContinueAsNew as request:
            if self.guards.definition_error is not None:
                return self._fail_definition()
            return continuation.restart(self, request)
        except RunTimeout:
            return compensations.undo(
                self,
                errors.WorkflowTimeoutError(
                    f"Instance {self.instance.id!r} ran past its run timeout "
                    f"({self.instance.deadline.isoformat() if self.instance.deadline else ''})."
                ),
            )
        except JournalFull:
            return compensations.undo(
                self,
                errors.WorkflowJournalLimitError(
                    f"The journal of instance {self.instance.id!r} reached its limit "
                    f"({len(self.journal.entries)} entries, {self.journal.journal_bytes()} bytes)."
                ),
            )
        except ReplayEnd:
            raise AssertionError("ReplayEnd outside a replay")
        except (Exception, SystemExit) as error:  # sys.exit() in its code: its error too
            if self.guards.definition_error is not None:
                return self._fail_definition()
            return compensations.undo(self, error)
        if self.guards.definition_error is not None:
            return self._fail_definition()
        if self.stops.flags.terminate_requested or self.stops.flags.cancel_requested:
            return compensations.undo(self, self.cancel_error(self.stops.flags.terminate_requested))
        try:
            output = self.lease.to_json(output, "The workflow's output")
        except (TypeError, ValueError) as error:
            return compensations.undo(self, error)
        return self.finish(Status.COMPLETED, output=output)

    def _run_definition(self, ctx: WorkflowContext) -> Any:
        """run(); an engine interrupt that its code swallowed is raised all the same, in place
        of a return or of another error raised instead of it."""
        try:
            output = self.definition.run(ctx, copy.deepcopy(self.instance.input))
        except errors.WorkflowInterrupt:
            raise
        except (Exception, SystemExit):
            swallowed = self.guards.swallowed()
            if swallowed is None:
                raise
            raise swallowed from None
        else:
            swallowed = self.guards.swallowed()
            if swallowed is not None:
                raise swallowed
            return output
        finally:
            self.guards.forget_interrupt()

    def _park(self) -> str:
        wake_at = self.stops.suspension.wake_at
        deadline = self.instance.deadline
        if deadline is not None and (wake_at is None or deadline < wake_at):
            wake_at = deadline
        waits = list(dict.fromkeys(self.stops.suspension.waits))
        self.lease.write(
            changes={"status": Status.SUSPENDED},
            release=store.Release(wake_at, waits, self.lease.last_signal_id, self.had_waits),
        )
        self.guards.emit(
            "workflow-suspended", wake_at=wake_at, waits=[{"signal": s, "key": k} for s, k in waits]
        )
        return Status.SUSPENDED

    def _hand_back(self) -> str:
        self.lease.ride = None  # a stopping execution: its worker claims nothing more
        if self.stops.escaped is not None:  # a step's KeyboardInterrupt in a gather branch
            self.stops.escaping(self.stops.escaped)
        try:
            self.lease.write(**self._handing_back(self.guards.now()))
        except LeaseLost:
            return "lease-lost"
        except StoreFailed:
            return "store-failed"  # the lease runs out: another worker runs it then
        logger.info("Instance %s handed back for another worker.", self.instance.id)
        return "handed-back"

    def _release_after(self, error: BaseException | None) -> None:
        """Workflow code raised a BaseException that is not the engine's nor the workflow's (a
        KeyboardInterrupt): hand the instance back as it stands before it propagates."""
        self.stops.escaping(error)
        logger.error(
            "Instance %s (%s@%s) stopped: its code raised %s; handing it back.",
            self.instance.id,
            self.instance.workflow,
            self.instance.version,
            type(error).__name__,
            exc_info=error,
        )
        self.lease.ride = None
        try:
            self.lease.write(**self._handing_back(self.guards.now()))
        except (errors.WorkflowInterrupt, Exception):
            logger.exception("Handing back instance %s failed.", self.instance.id)

    def _handing_back(self, now: datetime) -> dict[str, Any]:
        """The write that hands the instance back, due at once, as it stands."""
        status = (
            Status.COMPENSATING if self.instance.status == Status.COMPENSATING else Status.SUSPENDED
        )
        return {
            "changes": {"status": status},
            "release": store.Release(now, [], self.lease.last_signal_id, self.had_waits),
        }

    def _leave_alone(self, error: BaseException) -> str:
        """A signal it needs cannot be read: write what it journaled, hand it back, leave it."""
        changes, release = _unreadable_release(self.instance)
        try:
            self.lease.write(changes=changes, release=release)
        except LeaseLost:
            return "lease-lost"
        _log_unreadable(self.instance, error)
        return "unreadable"

    def close_children(self, why: str) -> None:
        """The children still running when this instance ends or starts compensating: cancel,
        terminate or leave each, as its `parent_close` says.

        Before the write that ends the instance or starts its undo, and never skipped: once that
        write lands, nothing runs the instance again to close them. If closing fails, the
        execution stops without that write, and runs again once its lease expires."""
        if self.stops.stop_reason == "lease-lost":  # another execution decides now
            raise LeaseLost()
        with self.lock:  # its journal says whether it started any: most never do
            started = any(name.startswith("$child:") for name in self.journal.entries)
        if started:
            self.lease.store_call(
                lambda: children.close_children(self.using, self.instance.id, why=why),
                "closing the children",
            )

    def cancel_error(self, terminate: bool) -> errors.WorkflowError:
        reason = self.stops.flags.reason
        if terminate:
            return errors.WorkflowTerminatedError(reason or "Terminated.")
        return errors.WorkflowCancelledError(reason or "Cancelled.")

    def _fail_definition(self) -> str:
        assert self.guards.definition_error is not None
        return self.finish(
            Status.FAILED, error=journal.serialize_error(self.guards.definition_error)
        )

    # -- undo: the compensations (compensations.py) ----------------------------------------

    def _resume_undo(self) -> str:
        """A compensating instance: replay run() to rebuild its compensations, then go on."""
        error = self.instance.error or {"name": "WorkflowError", "message": "Unknown failure."}
        self.journal.replay_only = True
        try:
            self.definition.run(WorkflowContext(self), copy.deepcopy(self.instance.input))
        except (LeaseLost, HandBack, StoreFailed):
            raise
        except (ReplayEnd, Suspend, Cancel, RunTimeout, JournalFull, Exception):
            pass
        self.guards.forget_interrupt()
        self.journal.replay_only = False
        if self.guards.definition_error is not None:
            failure = {
                **error,
                "compensation": journal.serialize_error(self.guards.definition_error),
            }
            return self.finish(Status.COMPENSATION_FAILED, error=failure)
        return compensations.compensate(self, error)

    # -- the end ---------------------------------------------------------------------------------

    def finish(
        self, status: str, *, output: Any = None, error: dict[str, Any] | None = None
    ) -> str:
        changes: dict[str, Any] = {"status": status, "output": output, "error": error}
        self.close_children(f"Its parent {self.instance.id!r} ended {status}.")
        self.lease.write(
            changes=changes,
            release=store.Release(None, [], self.lease.last_signal_id, self.had_waits),
            # A child tells its parent in the same transaction: its end is never lost.
            signal=children.end_signal(self.instance, status, output, error)
            if self.instance.parent_id
            else None,
        )
        wakeups.instance_ended(self.instance.id)
        schedule_id = self.instance.schedule_id
        if schedule_id:  # an occurrence buffered behind this one can start now
            now = self.guards.now()
            try:
                self.lease.store_call(
                    lambda: schedules_store.wake_schedule(self.using, schedule_id, now),
                    "the wake-up of its schedule",
                )
            except StoreFailed:
                self.guards.forget_interrupt()  # logged; a buffered occurrence starts when next due
        data: dict[str, Any] = (
            {"output": output} if status == Status.COMPLETED else {"error": error}
        )
        self.guards.emit(_FINAL_EVENTS[status], **data)
        return status


UNREADABLE_RETRY = timedelta(minutes=1)


def _unreadable_release(instance: WorkflowInstance) -> tuple[dict[str, Any], store.Release]:
    """Back to its status before the claim, the run not counted, due again in a minute; its
    waits stay registered, so a signal still wakes it."""
    if instance.status == Status.COMPENSATING:
        status = Status.COMPENSATING
    else:
        status = Status.SUSPENDED if instance.runs > 1 else Status.PENDING
    now = clock.now()
    changes = {"status": status, "runs": max(instance.runs - 1, 0)}
    release = store.Release(now + UNREADABLE_RETRY, [], instance.signal_cursor, False, hold=True)
    return changes, release


def _log_unreadable(instance: WorkflowInstance, error: BaseException) -> None:
    logger.error(
        "Instance %s (%s@%s) cannot be read: %s It is left alone; a worker tries again in a "
        "minute.",
        instance.id,
        instance.workflow,
        instance.version,
        error,
    )


def leave_alone(using: str, instance: WorkflowInstance, token: str, error: BaseException) -> str:
    """Hand back a claimed instance whose payloads the codec cannot read (a key that is not
    listed) without running it: it runs once the key is back."""
    changes, release = _unreadable_release(instance)
    write = store.InstanceWrite(
        now=clock.now(),
        changes=changes,
        release=release,
        unpark=store.parked_by(instance),
    )
    if store.write(using, instance.id, token, write) is None:
        return "lease-lost"
    _log_unreadable(instance, error)
    return "unreadable"
