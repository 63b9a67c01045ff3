"""A step's attempt: its function run on this thread or, with timeouts, on one of its own,
inside scope.running_step; and a failed attempt journaled (of a step or a compensation)."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.db import connections

from .. import errors, middleware
from . import journal
from .scope import running_step
from .stepcontext import StepContext
from .tracebacks import raised_at

if TYPE_CHECKING:
    from .surface import Surface

logger = logging.getLogger("django_workflows")


def invoke(
    x: Surface,
    step: StepContext,
    call: Callable[[], Any],
    timeout: timedelta | None,
    heartbeat_timeout: timedelta | None,
    *,
    name: str,
    entry_name: str,
) -> Any:
    """Run a step's function (of the step `name`, journaled as `entry_name`); with timeouts,
    in a thread of its own that can be abandoned (Python cannot kill a thread: a late result
    is discarded)."""
    call = _ending_streams(step, call)
    # STEP_MIDDLEWARE, around every attempt
    call = middleware.wrap(x.instance, entry_name, name, step.attempt, call)
    with x.lock:
        x.stops.running_steps.add(step)
    try:
        if timeout is None and heartbeat_timeout is None:
            x.local.in_step = True
            running = running_step.set(step)
            try:
                return call()
            finally:
                running_step.reset(running)
                x.local.in_step = False
        return _call_with_timeouts(x, step, name, call, timeout, heartbeat_timeout)
    finally:
        with x.lock:
            x.stops.running_steps.discard(step)


def _ending_streams(step: StepContext, call: Callable[[], Any]) -> Callable[[], Any]:
    """`call`, then the end of the streams it wrote (step.stream()): their last items are
    stored before the attempt's outcome, and a batch the store refused fails the attempt."""

    def ended() -> Any:
        try:
            result = call()
        except BaseException:
            with contextlib.suppress(Exception):
                step.end_streams()
            raise
        step.end_streams()
        return result

    return ended


def _call_with_timeouts(
    x: Surface,
    step: StepContext,
    name: str,
    call: Callable[[], Any],
    timeout: timedelta | None,
    heartbeat_timeout: timedelta | None,
) -> Any:
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        x.local.in_step = True
        running_step.set(step)  # this thread runs nothing else
        try:
            box["result"] = call()
        except BaseException as error:  # handed to the execution's thread
            box["error"] = error
        finally:
            done.set()
            x.lease.calls.wake()
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
            step.time_out()  # an async function's coroutine is cancelled; a thread cannot be
            raise errors.StepTimeoutError(
                f'Step "{name}" attempt {step.attempt} ran past its {which} of {length}.'
            )
        x.lease.calls.serve(min(remaining, 0.25))
    if "error" in box:
        raise box["error"]
    return box.get("result")


def attempt_failed(
    x: Surface,
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
        'Step "%s" of instance %s failed (attempt %d, %s): %s: %s, raised at %s.',
        name,
        x.instance.id,
        attempt,
        "no more attempts" if gives_up else "it is retried",
        serialized["name"],
        serialized["message"],
        raised_at(error),
        exc_info=error,
    )
    if gives_up:
        x.journal.record(name, position, **{**failed, "status": journal.FAILED})
        x.guards.emit("step-failed", step=name, attempt=attempt, error=serialized, retry_at=None)
        return None
    retry_at = x.guards.now() + policy.wait_before(attempt, error)
    entry = x.journal.record(
        name,
        position,
        **{**failed, "status": journal.PENDING, "retry_at": journal.timestamp(retry_at)},
    )
    x.guards.emit("step-failed", step=name, attempt=attempt, error=serialized, retry_at=retry_at)
    return entry
