"""Steps (ctx.step()): replay a journaled result, or run an attempt, journal it, and retry on
failure."""

from __future__ import annotations

import copy
import functools
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import errors
from ..durations import Duration, parse_duration
from ..jsonvalues import UnstorableValueError
from ..models import JOURNAL_NAME_LENGTH
from . import atomic as atomic_steps
from . import journal
from .attempts import attempt_failed, invoke
from .compensations import register
from .coroutines import refuse_async_fn, refuse_coroutine
from .interrupts import Suspend
from .retries import default_retry
from .signatures import call_problem
from .stepcontext import StepContext
from .steplog import carried
from .tracebacks import attempt_error

if TYPE_CHECKING:
    from .surface import Surface


def check_arguments(x: Any, fn: Callable[..., Any], count: int, what: str, like: str) -> None:
    """WorkflowDefinitionError unless `fn` can be called with `count` positional arguments: a
    `lambda: ...` for a step would otherwise fail every attempt with a TypeError."""
    if isinstance(fn, types.FunctionType) and not hasattr(fn, "__wrapped__"):
        # A step's lambda is a new function at every call, with the same code: read the
        # signature once per code object and defaults, not at every step.
        problem = _binds_code(
            fn.__code__, len(fn.__defaults__ or ()), tuple(fn.__kwdefaults__ or ()), count
        )
    else:
        problem = call_problem(fn, count)
    if problem is not None:
        raise x.guards.define_error(
            errors.WorkflowDefinitionError(
                f"{what} must take {count} argument{'s' if count > 1 else ''} ({like}); "
                f"{getattr(fn, '__qualname__', fn)} {problem}."
            )
        )


@functools.lru_cache(maxsize=4096)
def _binds_code(
    code: types.CodeType, defaults: int, kwdefaults: tuple[str, ...], count: int
) -> str | None:
    """call_problem() of any function with this code and these defaults (their values do not
    matter)."""
    closure = tuple(types.CellType() for _ in code.co_freevars) or None
    function = types.FunctionType(code, {}, None, (None,) * defaults or None, closure)
    function.__kwdefaults__ = dict.fromkeys(kwdefaults) or None
    return call_problem(function, count)


def step(
    x: Surface,
    name: str,
    fn: Callable[[StepContext], Any],
    *,
    retry: Any,
    timeout: Duration | None,
    heartbeat_timeout: Duration | None,
    compensate: Callable[[Any, StepContext], Any] | None,
    compensate_retry: Any,
    atomic: Any = False,
    first_attempt: int = 1,
    key: str | None = None,
) -> Any:
    """ctx.step(): its journaled result, or its function run (and retried) and its result
    journaled. WorkflowDefinitionError for a missing name or function, or one that takes other
    arguments; ValueError for a name too long for a compensation's entry or a bad duration;
    StepFailedError once it gives up.

    A task's dispatch passes `first_attempt` (the task's attempt: the number its step.attempt
    starts at) and `key` (the name its idempotency key is built from, instead of `name`)."""
    name = journal.check_name(name, "step")
    if not callable(fn):
        raise errors.WorkflowDefinitionError(f'Step "{name}" needs a function, got {fn!r}.')
    check_arguments(x, fn, 1, f'The function of step "{name}"', "lambda step: ...")
    refuse_async_fn(x, fn, f'The function of step "{name}"')
    if compensate is not None:
        refuse_async_fn(x, compensate, f'The compensation of step "{name}"')
        check_arguments(
            x, compensate, 2, f'The compensation of step "{name}"', "lambda result, step: ..."
        )
    longest = JOURNAL_NAME_LENGTH - len(journal.COMPENSATION_PREFIX)
    if compensate is not None and len(name) > longest:
        raise ValueError(
            f'The step name "{name[:40]}..." is {len(name)} characters long; a step with a '
            f"compensation (journaled as {journal.COMPENSATION_PREFIX}<step>) can be at most "
            f"{longest}."
        )
    run_timeout = None if timeout is None else parse_duration(timeout, f'Step "{name}" timeout')
    heartbeat = (
        None
        if heartbeat_timeout is None
        else parse_duration(heartbeat_timeout, f'Step "{name}" heartbeat_timeout')
    )
    atomic = atomic_steps.check(x, name, fn, atomic, timeout, heartbeat_timeout)
    position, entry = x.journal.enter(name, "step")
    if entry is not None and entry["status"] == journal.COMPLETED:
        register(x, position, name, compensate, compensate_retry, entry["result"])
        return copy.deepcopy(entry["result"])
    if entry is not None and entry["status"] == journal.FAILED:
        raise journal.step_failed_from(name, entry)
    x.stops.check_interrupts(name, entry)
    if entry is None:
        x.journal.check_replay(name, position)
    policy = default_retry().merged(retry, f'Step "{name}" retry')
    # The first step of an untouched journal, if it may start unwritten (below): each earlier
    # claim was an attempt of it that stopped with its worker before writing anything, up to
    # its last attempt, whose start is always written.
    stopped = 0
    if entry is None and position == (0,):
        stopped = min(x.lease.stopped_before_writing(), max(policy.attempts - first_attempt, 0))
    while True:
        if entry is not None and entry["status"] == journal.PENDING:
            retry_at = journal.parse_timestamp(entry.get("retry_at"))
            if retry_at is not None and retry_at > x.guards.now():
                x.stops.suspend(wake_at=retry_at)
        # A gather branch that parks the instance: new steps in the others wait for it.
        if x.stops.gate.enter_step():
            raise x.guards.interrupted(Suspend())
        try:
            attempt = (
                (entry.get("attempt") or 0) + 1 if entry is not None else first_attempt + stopped
            )
            progress = entry.get("progress") if entry is not None else None
            if (
                entry is not None
                and entry["status"] == journal.RUNNING
                and attempt > policy.attempts
            ):
                lost = errors.WorkflowError(
                    f"attempt {attempt - 1} stopped with the worker that ran it"
                )
                x.journal.record(
                    name,
                    position,
                    **{
                        **entry,
                        "status": journal.FAILED,
                        "error": journal.serialize_error(lost),
                        "finished_at": journal.timestamp(x.guards.now()),
                    },
                )
                raise journal.step_failed(name, attempt - 1, lost)
            started = x.guards.now()
            running = {
                "kind": "step",
                "status": journal.RUNNING,
                "attempt": attempt,
                "started_at": journal.timestamp(started),
                "progress": progress,
                "pos": list(position),
                **carried(entry),  # the lines of the attempts before
            }
            if entry is None:
                x.journal.check_journal_limits("step")
            if (
                entry is None
                and position == (0,)
                and attempt < policy.attempts
                and not atomic
                and x.lease.defers_start()
            ):
                # The claim stands in for the start, which rides with the next write. Not
                # for a last attempt: a claim can also stop before its step starts, and would
                # then count as the attempt that ends the step.
                with x.lock:
                    x.journal.keep(name, running)
                    x.journal.pending[name] = running
            else:
                # The attempt's start, with everything buffered before it. The write reads the
                # instance's flags under its row lock and writes the start only if no cancel
                # came since the last write: such a cancel stops the step before it runs.
                flags = x.lease.write(guarded={name: running})
                if flags.cancel_requested or flags.terminate_requested:
                    x.stops.check_interrupts(name, entry)
                with x.lock:
                    x.journal.keep(name, running)
            step = StepContext(x, name, name, attempt, progress, atomic=atomic, key=key)
            try:
                with atomic_steps.attempt(x, atomic):
                    call: Callable[[], Any] = lambda step=step: fn(step)  # type: ignore[misc]  # noqa: E731
                    result = invoke(
                        x, step, call, run_timeout, heartbeat, name=name, entry_name=name
                    )
                    refuse_coroutine(x, result, f'The function of step "{name}"')
                    if atomic:
                        atomic_steps.check_usable(x, name)
                    what = f'The result of step "{name}"'
                    if atomic:
                        result = atomic_steps.to_json(x, result, what)
                    else:
                        result = x.lease.to_json(result, what)
                    finished = x.guards.now()
                    x.journal.record(
                        name,
                        position,
                        **{
                            **running,
                            "status": journal.COMPLETED,
                            "result": result,
                            "finished_at": journal.timestamp(finished),
                            "progress": None,
                            **step.log.journaled(),
                        },
                    )
                    if atomic:  # the completion commits with the function's writes
                        atomic_steps.commit_entry(x)
            except BaseException as error:
                if isinstance(error, errors.WorkflowInterrupt):
                    if atomic:
                        atomic_steps.forget_attempt(x, name, position, entry, running)
                    raise
                if not isinstance(error, Exception | SystemExit):  # KeyboardInterrupt...
                    raise x.stops.escape(error)
                if x.guards.definition_error is not None:
                    raise x.guards.definition_error
                if x.stops.stop_reason is not None:
                    raise x.stops.stop_interrupt()
                now = x.guards.now()
                failed = {
                    **running,
                    "error": attempt_error(error),
                    "finished_at": journal.timestamp(now),
                    # An atomic attempt's checkpoints went with its rolled-back writes.
                    "progress": progress if atomic else step.progress,
                    **step.log.journaled(),
                }
                gives_up = (
                    (isinstance(error, TypeError | ValueError) and "JSON" in str(error))
                    or isinstance(error, UnstorableValueError)
                    or policy.gives_up(attempt, error)
                )
                entry = attempt_failed(x, name, position, failed, attempt, error, policy, gives_up)
                if entry is None:
                    raise journal.step_failed(name, attempt, error, failed["error"]["traceback"])
                continue
            x.guards.emit(
                "step-completed",
                step=name,
                attempt=attempt,
                duration_ms=round((finished - started).total_seconds() * 1000),
            )
            register(x, position, name, compensate, compensate_retry, result)
            return copy.deepcopy(result)
        finally:
            x.stops.gate.leave_step()
