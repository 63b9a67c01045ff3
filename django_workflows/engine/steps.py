"""Steps: replay a journaled result, or run an attempt, journal it, and retry on failure."""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db import connections

from .. import errors
from ..jsonvalues import UnstorableValueError
from ..retries import default_retry
from ..scope import running_step
from . import journal
from .context import StepContext
from .runtime import Compensation, Runtime

logger = logging.getLogger("django_workflows")


def run_step(
    x: Runtime,
    name: str,
    fn: Callable[[StepContext], Any],
    *,
    retry: Any,
    timeout: timedelta | None,
    heartbeat_timeout: timedelta | None,
    compensate: Any,
    compensate_retry: Any,
) -> Any:
    position, entry = x.enter(name, "step")
    if entry is not None and entry["status"] == journal.COMPLETED:
        _register(x, position, name, compensate, compensate_retry, entry["result"])
        return copy.deepcopy(entry["result"])
    if entry is not None and entry["status"] == journal.FAILED:
        raise journal.step_failed_from(name, entry)
    x.check_interrupts(name, entry)
    if entry is None:
        x.check_replay(name, position)
    policy = default_retry().merged(retry, f'Step "{name}" retry')
    while True:
        if entry is not None and entry["status"] == journal.PENDING:
            retry_at = journal.parse_timestamp(entry.get("retry_at"))
            if retry_at is not None and retry_at > x.now():
                x.suspend(wake_at=retry_at)
        # A gather branch that parks the instance: new steps in the others wait for it.
        x.start_gate()
        try:
            attempt = (entry.get("attempt") or 0) + 1 if entry is not None else 1
            progress = entry.get("progress") if entry is not None else None
            if (
                entry is not None
                and entry["status"] == journal.RUNNING
                and attempt > policy.attempts
            ):
                lost = errors.WorkflowError(
                    f"attempt {attempt - 1} stopped with the worker that ran it"
                )
                x.record(
                    name,
                    position,
                    **{
                        **entry,
                        "status": journal.FAILED,
                        "error": journal.serialize_error(lost),
                        "finished_at": journal.timestamp(x.now()),
                    },
                )
                raise journal.step_failed(name, attempt - 1, lost)
            started = x.now()
            running = {
                "kind": "step",
                "status": journal.RUNNING,
                "attempt": attempt,
                "started_at": journal.timestamp(started),
                "progress": progress,
                "pos": list(position),
            }
            if entry is None:
                x._check_journal_limits("step")
            # The attempt's start, with everything buffered before it. The write reads the
            # instance's flags under its row lock and writes the start only if no cancel came
            # since the last write: such a cancel stops the step before it runs.
            flags = x.write(guarded={name: running})
            if flags.cancel_requested or flags.terminate_requested:
                x.check_interrupts(name, entry)
            with x._lock:
                x.keep(name, running)
            step = StepContext(x, name, name, attempt, progress)  # type: ignore[arg-type]
            try:
                call: Callable[[], Any] = lambda step=step: fn(step)  # type: ignore[misc]  # noqa: E731
                result = invoke(x, step, call, timeout, heartbeat_timeout)
                result = x.to_json(result, f'The result of step "{name}"')
            except BaseException as error:
                if isinstance(error, errors.WorkflowInterrupt):
                    raise
                if not isinstance(error, Exception):  # SystemExit, KeyboardInterrupt...
                    x.escaped = x.escaped or error
                if x.definition_error is not None:
                    raise x.definition_error
                if x.stop_reason is not None:
                    raise x.stop_interrupt()
                now = x.now()
                failed = {
                    **running,
                    "error": journal.serialize_error(error),
                    "finished_at": journal.timestamp(now),
                    "progress": step.progress,
                }
                gives_up = (
                    (isinstance(error, TypeError | ValueError) and "JSON" in str(error))
                    or isinstance(error, UnstorableValueError)
                    or policy.gives_up(attempt, error)
                )
                entry = attempt_failed(x, name, position, failed, attempt, error, policy, gives_up)
                if entry is None:
                    raise journal.step_failed(name, attempt, error)
                continue
            finished = x.now()
            x.record(
                name,
                position,
                **{
                    **running,
                    "status": journal.COMPLETED,
                    "result": result,
                    "finished_at": journal.timestamp(finished),
                    "progress": None,
                },
            )
            x._emit(
                "step-completed",
                step=name,
                attempt=attempt,
                duration_ms=round((finished - started).total_seconds() * 1000),
            )
            _register(x, position, name, compensate, compensate_retry, result)
            return copy.deepcopy(result)
        finally:
            x.step_ended()


def _register(
    x: Runtime, position: tuple[int, ...], name: str, compensate: Any, retry: Any, result: Any
) -> None:
    if compensate is not None:
        with x._lock:
            x.compensations.append(Compensation(position, name, compensate, retry, result))


def invoke(
    x: Runtime,
    step: StepContext,
    call: Callable[[], Any],
    timeout: timedelta | None,
    heartbeat_timeout: timedelta | None,
) -> Any:
    """Run a step's function; with timeouts, in a thread of its own that can be abandoned
    (Python cannot kill a thread: a late result is discarded)."""
    with x._lock:
        x.running_steps.add(step)
    try:
        if timeout is None and heartbeat_timeout is None:
            x._local.in_step = True
            running = running_step.set(step)
            try:
                return call()
            finally:
                running_step.reset(running)
                x._local.in_step = False
        return _call_with_timeouts(x, step, call, timeout, heartbeat_timeout)
    finally:
        with x._lock:
            x.running_steps.discard(step)


def _call_with_timeouts(
    x: Runtime,
    step: StepContext,
    call: Callable[[], Any],
    timeout: timedelta | None,
    heartbeat_timeout: timedelta | None,
) -> Any:
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        x._local.in_step = True
        running_step.set(step)  # this thread runs nothing else
        try:
            box["result"] = call()
        except BaseException as error:  # handed to the execution's thread
            box["error"] = error
        finally:
            done.set()
            x._wake_owner()
            connections.close_all()  # this thread's own connections only

    started = time.monotonic()
    threading.Thread(target=target, name=f"step {step.idempotency_key}", daemon=True).start()
    while not done.is_set():
        limits = []
        if timeout is not None:
            limits.append((started + timeout.total_seconds(), "timeout", timeout))
        if heartbeat_timeout is not None:
            limits.append(
                (
                    step.last_beat + heartbeat_timeout.total_seconds(),
                    "heartbeat_timeout",
                    heartbeat_timeout,
                )
            )
        at, which, length = min(limits)
        remaining = at - time.monotonic()
        if remaining <= 0:
            step.cancelled.set()
            raise errors.StepTimeoutError(
                f'Step "{step._name}" attempt {step.attempt} ran past its {which} of {length}.'
            )
        x._serve(min(remaining, 0.25))
    if "error" in box:
        raise box["error"]
    return box.get("result")


def attempt_failed(
    x: Runtime,
    name: str,
    position: tuple[int, ...] | None,
    failed: dict[str, Any],
    attempt: int,
    error: BaseException,
    policy: Any,
    gives_up: bool,
) -> dict[str, Any] | None:
    """Journal a failed attempt (of a step or a compensation) and send `step-failed`: the entry,
    pending its retry, or None when the step gives up."""
    serialized = journal.serialize_error(error)
    logger.log(
        logging.WARNING if isinstance(error, Exception) else logging.ERROR,
        'Step "%s" of instance %s failed (attempt %d, %s).',
        name,
        x.instance.id,
        attempt,
        "no more attempts" if gives_up else "it is retried",
        exc_info=error,
    )
    if gives_up:
        x.record(name, position, **{**failed, "status": journal.FAILED})
        x._emit("step-failed", step=name, attempt=attempt, error=serialized, retry_at=None)
        return None
    retry_at = x.now() + policy.wait_before(attempt, error)
    entry = x.record(
        name,
        position,
        **{**failed, "status": journal.PENDING, "retry_at": journal.timestamp(retry_at)},
    )
    x._emit("step-failed", step=name, attempt=attempt, error=serialized, retry_at=retry_at)
    return entry
