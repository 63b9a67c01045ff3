"""The client's calls that continue an instance waiting for a person or another system:
resume() a breakpoint, complete_task() or fail_task() an external task.

Each records an engine-owned signal (`$breakpoint`, `$task`) inside the caller's transaction,
only while the instance waits at that very place; otherwise it raises WorkflowStateError and
stores nothing. Nothing is kept for later: a resume or a completion that comes too early, too
late or twice is refused, never silently dropped.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from django.db import transaction

from .. import clock
from ..conf import database_alias
from ..engine.externaltasks import TASK_PREFIX
from ..engine.starts import check_key, wake_on_commit
from ..errors import WorkflowNotFoundError, WorkflowStateError
from ..jsonvalues import MAX_MESSAGE, check_lookup, check_text
from ..store import signals
from ..store.jsonvalues import to_json


def _check(id: Any, name: Any, what: str, *, optional: bool = False) -> None:
    """TypeError or ValueError, naming the argument, for an id or name that cannot be one."""
    if not isinstance(id, str):
        raise TypeError(f"id must be a string, not {type(id).__name__}.")
    if not id:
        raise ValueError("id must not be empty.")
    check_lookup("id", id)
    if name is None and optional:
        return
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, not {type(name).__name__}.")
    if not name:
        raise ValueError(f"name must name the {what}, not be empty.")
    check_lookup("name", name)


def resume(id: str, name: str | None = None, *, using: str | None = None) -> str:
    """Continue the instance waiting at the breakpoint `name` (with None, at its only one);
    returns the breakpoint's name. Joins the caller's transaction.

    Raises WorkflowNotFoundError for an unknown id; WorkflowStateError, storing nothing, when
    the instance is not waiting at that breakpoint (not there yet, past it, finished, at
    several with no name given, or resumed there already and not yet moved on); TypeError or
    ValueError for a bad id or name.
    """
    _check(id, name, "breakpoint", optional=True)
    using = database_alias(using)
    check_key("id", id, using)
    with transaction.atomic(using=using, savepoint=False):
        pending = signals.lock_pending(using, id, "breakpoint")
        refusal = _refusal(
            id, pending, ended="is at no breakpoint", idle="is not waiting at a breakpoint"
        )
        if refusal is None:
            names = list(pending.entries)
            if name is None and len(names) > 1:
                refusal = (
                    f"Instance {id!r} waits at several breakpoints ({', '.join(names)}): "
                    f"name the one to resume."
                )
            elif name is not None and name not in pending.entries:
                refusal = (
                    f"Instance {id!r} is not at breakpoint {name!r}; it waits at "
                    f"{', '.join(repr(n) for n in names)}."
                )
        if refusal is None:
            name = name if name is not None else names[0]
            doc = pending.entries[name]
            payload = {"name": name, "at": doc.get("started_at")}
            if pending.generation:
                payload["generation"] = pending.generation
            if not signals.record_answer(
                using,
                signal=signals.BREAKPOINT_SIGNAL,
                id=id,
                generation=pending.generation,
                entry=name,
                doc=doc,
                payload=payload,
                now=clock.now(),
            ):
                refusal = f"Instance {id!r} was resumed at breakpoint {name!r} already."
            else:
                wake_on_commit(using)
    # Raised outside the atomic block: a refusal leaves the caller's transaction usable.
    if refusal is not None:
        raise _error(pending, refusal)
    assert name is not None
    return name


def complete_task(
    id: str,
    name: str,
    result: Any = None,
    *,
    attempt: int | None = None,
    using: str | None = None,
) -> None:
    """Report the external task `name` done with `result` (JSON), which ctx.task() returns.
    With `attempt` (the `step.attempt` its dispatch received), only that attempt may take the
    report. Joins the caller's transaction.

    Raises WorkflowNotFoundError for an unknown id; WorkflowStateError, storing nothing, when
    the instance is not waiting for that task, or for that attempt of it (not dispatched yet,
    timed out, completed or failed already, finished); TypeError for a result that is not
    JSON, TypeError or ValueError for a bad id, name or attempt or a result too large.
    """
    _check(id, name, "task")
    _check_attempt(attempt)
    using = database_alias(using)
    value = to_json(result, f'The result of task "{name}"', using=using)
    _report(id, name, attempt, {"outcome": "completed", "result": value}, using)


def fail_task(
    id: str,
    name: str,
    message: str,
    *,
    attempt: int | None = None,
    using: str | None = None,
) -> None:
    """Report the external task `name` failed: ctx.task() retries it like a failed step (its
    dispatch runs again, as the next attempt), or raises StepFailedError with `message` once
    the policy gives up. With `attempt`, as complete_task(). Joins the caller's transaction.

    Raises as complete_task() does, and TypeError or ValueError for a message that is not a
    string or is too long.
    """
    _check(id, name, "task")
    _check_attempt(attempt)
    if not isinstance(message, str):
        raise TypeError(f"message must be a string, not {type(message).__name__}.")
    if len(message) > MAX_MESSAGE:
        raise ValueError(
            f"message is {len(message)} characters long; the most it can be is {MAX_MESSAGE}."
        )
    check_text("message", message)
    _report(id, name, attempt, {"outcome": "failed", "message": message}, using)


def _check_attempt(attempt: Any) -> None:
    """TypeError or ValueError for an `attempt` that is not None or a positive integer."""
    if attempt is None:
        return
    if not isinstance(attempt, int) or isinstance(attempt, bool):
        raise TypeError(
            f"attempt must be an integer (the step.attempt the dispatch received), not "
            f"{type(attempt).__name__}."
        )
    if attempt < 1:
        raise ValueError(f"attempt must be 1 or more (attempts count from 1), not {attempt}.")


def _report(
    id: str, name: str, attempt: int | None, outcome: dict[str, Any], using: str | None
) -> None:
    using = database_alias(using)
    check_key("id", id, using)
    numbered = re.compile(re.escape(f"{TASK_PREFIX}{name}#") + r"([0-9]+)")
    with transaction.atomic(using=using, savepoint=False):
        pending = signals.lock_pending(using, id, "task")
        refusal = _refusal(
            id,
            pending,
            ended=f"waits for no task {name!r}",
            idle=f"is not waiting for task {name!r}",
        )
        waiting = [
            (entry, int(found.group(1)))
            for entry in pending.entries
            if (found := numbered.fullmatch(entry))
        ]
        if refusal is None and not waiting:
            refusal = f"Instance {id!r} is not waiting for task {name!r}."
        if refusal is None:
            entry, number = waiting[-1]
            doc = pending.entries[entry]
            now = clock.now()
            deadline = (doc.get("deadlines") or {}).get("timeout")
            if attempt is not None and attempt != number:
                refusal = (
                    f"Task {name!r} of instance {id!r} waits for attempt {number}, not for "
                    f"attempt {attempt}: the report is for another attempt."
                )
            # Past the deadline the timer wins the wait (the engine's rule): refuse, not lose.
            elif deadline is not None and now >= datetime.fromisoformat(deadline):
                refusal = f"Task {name!r} of instance {id!r} timed out (attempt {number})."
            elif not signals.record_answer(
                using,
                signal=signals.TASK_SIGNAL,
                id=id,
                generation=pending.generation,
                entry=entry,
                doc=doc,
                payload={
                    "task": name,
                    "attempt": number,
                    "at": doc.get("started_at"),
                    **({"generation": pending.generation} if pending.generation else {}),
                    **outcome,
                },
                now=now,
            ):
                refusal = (
                    f"Task {name!r} of instance {id!r} was reported already (attempt {number})."
                )
            else:
                wake_on_commit(using)
    if refusal is not None:
        raise _error(pending, refusal)


def _refusal(id: str, pending: signals.Pending, *, ended: str, idle: str) -> str | None:
    """Why `id` cannot be resumed or completed: unknown, finished (`ended`: what it then is
    not, "waits for no task 'x'"), or waiting for nothing addressed (`idle`)."""
    if pending.status is None:
        return f"No workflow instance has the id {id!r}."
    if pending.finished:
        return f"Instance {id!r} is {pending.status}: it {ended}."
    if not pending.entries:
        return f"Instance {id!r} {idle}."
    return None


def _error(pending: signals.Pending, message: str) -> Exception:
    if pending.status is None:
        return WorkflowNotFoundError(message)
    return WorkflowStateError(message)
