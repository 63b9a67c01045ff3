"""Compensations: registered by completed steps, discarded at a commit point, and run in
reverse order when the instance fails or is cancelled (its undo)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from .. import errors
from ..models import Status
from ..store import instances as store
from . import journal
from .attempts import attempt_failed, invoke
from .retries import default_retry
from .stepcontext import StepContext
from .steplog import carried
from .surface import Compensation
from .tracebacks import attempt_error

if TYPE_CHECKING:
    from .surface import Ending, Surface

UNDONE_AS = {
    "WorkflowCancelledError": Status.CANCELLED,
    "WorkflowTerminatedError": Status.CANCELLED,
}
"""The status an instance ends with once undone, by its error's name; `failed` for others."""


def register(
    x: Surface, position: tuple[int, ...], name: str, compensate: Any, retry: Any, result: Any
) -> None:
    """The step `name` completed with `result`: hold its compensation, if it has one."""
    if compensate is not None:
        with x.lock:
            x.compensations.append(Compensation(position, name, compensate, retry, result))


def commit(x: Surface, name: str) -> None:
    """The commit point `name`: journaled once; the compensations registered so far go."""
    position, entry = x.journal.enter(name, "commit")
    if entry is None or entry["status"] != journal.COMPLETED:
        x.stops.check_interrupts(name, entry)
        x.journal.record(
            name,
            position,
            kind="commit",
            status=journal.COMPLETED,
            finished_at=journal.timestamp(x.guards.now()),
        )
    with x.lock:
        x.compensations.clear()


def undo(x: Ending, reason: BaseException) -> str:
    """The instance failed or was cancelled: run the compensations, in reverse order."""
    if x.stops.flags.terminate_requested:
        return x.finish(Status.CANCELLED, error=journal.serialize_error(x.cancel_error(True)))
    error = journal.serialize_error(reason)
    if not x.compensations:
        return x.finish(UNDONE_AS.get(error["name"], Status.FAILED), error=error)
    x.close_children(f"Its parent {x.instance.id!r} is compensating.")
    x.lease.write(changes={"status": Status.COMPENSATING, "error": error})
    x.instance.status = Status.COMPENSATING
    x.guards.emit("workflow-compensating", error=error)
    return compensate(x, error)


def compensate(x: Ending, error: dict[str, Any]) -> str:
    """Run the compensations registered so far, latest step position first, then end the
    instance as `error` says (or `compensation_failed`, or `cancelled` by a terminate)."""
    compensations = sorted(x.compensations, key=lambda c: c.position, reverse=True)
    reason = journal.error_from_dict(error)
    for compensation in compensations:
        outcome = _run_compensation(x, compensation, error, reason)
        if outcome is not None:
            return outcome
    return x.finish(UNDONE_AS.get(error["name"], Status.FAILED), error=error)


def _run_compensation(
    x: Ending, compensation: Compensation, error: dict[str, Any], reason: BaseException
) -> str | None:
    """Run one compensation to its end; a final status when the undo cannot go on."""
    name = f"{journal.COMPENSATION_PREFIX}{compensation.step}"
    entry = x.journal.entries.get(name)
    if entry is not None and entry["status"] == journal.COMPLETED:
        return None
    policy = default_retry().merged(
        compensation.retry, f'Step "{compensation.step}" compensate_retry'
    )
    while True:
        if x.stops.flags.terminate_requested:
            return x.finish(Status.CANCELLED, error=journal.serialize_error(x.cancel_error(True)))
        if x.stops.stop_reason is not None:
            raise x.stops.stop_interrupt()
        now = x.guards.now()
        if entry is not None and entry["status"] == journal.PENDING:
            retry_at = journal.parse_timestamp(entry.get("retry_at"))
            if retry_at is not None and retry_at > now:
                x.lease.write(
                    changes={"status": Status.COMPENSATING},
                    release=store.Release(retry_at, [], x.lease.last_signal_id, x.had_waits),
                )
                x.guards.emit("workflow-suspended", wake_at=retry_at, waits=[])
                return Status.COMPENSATING
        attempt = (entry.get("attempt") or 0) + 1 if entry is not None else 1
        running = x.journal.record(
            name,
            None,
            kind="compensation",
            status=journal.RUNNING,
            step=compensation.step,
            attempt=attempt,
            started_at=journal.timestamp(now),
            **carried(entry),  # the lines of the attempts before
        )
        x.lease.write()
        step = StepContext(x, compensation.step, name, attempt, None, reason=reason)
        try:
            invoke(
                x,
                step,
                lambda step=step: compensation.fn(  # type: ignore[misc]
                    copy.deepcopy(compensation.result), step
                ),
                None,
                None,
                name=compensation.step,
                entry_name=name,
            )
        except BaseException as failure:
            if isinstance(failure, errors.WorkflowInterrupt):
                raise
            if not isinstance(failure, Exception | SystemExit):  # KeyboardInterrupt...
                raise x.stops.escape(failure)
            if x.stops.stop_reason is not None:
                raise x.stops.stop_interrupt()
            now = x.guards.now()
            failed = {
                **running,
                "error": attempt_error(failure),
                "finished_at": journal.timestamp(now),
                **step.log.journaled(),
            }
            entry = attempt_failed(
                x,
                name,
                None,
                failed,
                attempt,
                failure,
                policy,
                policy.gives_up(attempt, failure),
            )
            if entry is None:
                compensation_error = {
                    **failed["error"],
                    "step": compensation.step,
                    "attempts": attempt,
                }
                return x.finish(
                    Status.COMPENSATION_FAILED,
                    error={**error, "compensation": compensation_error},
                )
            continue
        x.journal.record(
            name,
            None,
            **{
                **running,
                "status": journal.COMPLETED,
                "finished_at": journal.timestamp(x.guards.now()),
                **step.log.journaled(),
            },
        )
        x.guards.emit("step-compensated", step=compensation.step, attempt=attempt)
        return None
