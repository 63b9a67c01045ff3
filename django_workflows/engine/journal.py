"""Journal entries as JSON documents, and errors as the dicts an instance stores."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .. import errors
from ..jsonvalues import check_value, dumps, storable_text

PATCH = "patch"  # a ctx.patched() marker's kind
FORK = "fork"  # the entry a fork starts with
HEADERS = "headers"  # the entry start() stores STEP_MIDDLEWARE's headers in

ENGINE_KINDS = ("compensation", "retry", PATCH, FORK, "continued", HEADERS)
"""Entries the replay check ignores: those the engine writes on its own, and patch markers,
which code whose guard was removed no longer reaches."""

BOOKKEEPING_KINDS = (FORK, "continued", HEADERS)
"""The engine's own bookkeeping, which no workflow code writes: a fork's `$fork`, what a run
after ctx.continue_as_new() carries over (`$continued`), start()'s middleware `$headers`. The
journal get_status() shows leaves them out (a fork's reads as the original's up to the step, a
continued run's starts empty); the stored journal, an export and the admin keep them."""

CONTINUED = "$continued"  # what a run started by ctx.continue_as_new() carries (continuation.py)

COMPLETED = "completed"
PENDING = "pending"
RUNNING = "running"
FAILED = "failed"
CANCELLED = "cancelled"

COMPENSATION_PREFIX = "$compensate:"  # a compensation's entry: "$compensate:<step name>"
PATCH_PREFIX = "$patch:"  # a patch marker's entry: "$patch:<patch id>"
# A fork's entry (django_workflows.fork()): the instance and step it was forked from, and
# `key`, the id its steps' idempotency keys start with: the first instance of the line's.
FORK_ENTRY = "$fork"


def run_key(instance_id: str, generation: int) -> str:
    """What the ids and keys a run derives start with (step idempotency keys, default child
    ids): the instance's id, then `~<generation>` for a run after ctx.continue_as_new(), so a
    later run neither repeats an earlier run's keys nor finds its children."""
    return f"{instance_id}~{generation}" if generation else instance_id


def timestamp(value: datetime | None) -> str | None:
    """A datetime as stored in a journal document: ISO 8601 in UTC."""
    return None if value is None else value.isoformat()


def parse_timestamp(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def serialize_error(error: BaseException) -> dict[str, Any]:
    """{name, message} and, where they apply, step, attempts and cause. What no database can
    store in the name or message (a lone surrogate, a NUL) is escaped: the error is the
    engine's to record, not a reason to fail again."""
    serialized: dict[str, Any] = {
        "name": storable_text(type(error).__name__),
        "message": storable_text(str(error)),
    }
    if isinstance(error, errors.StepFailedError):
        serialized.update(step=error.step, attempts=error.attempts)
        if error.cause is not None:
            serialized["cause"] = error.cause
        if error.traceback is not None:
            serialized["traceback"] = error.traceback
    elif isinstance(error, errors.WorkflowFailedError) and isinstance(error.cause, dict):
        serialized["cause"] = _storable_cause(error.cause)
    return serialized


def _storable_cause(cause: dict[str, Any]) -> dict[str, Any]:
    """A cause given to a WorkflowFailedError, or its repr as the message of one when no
    database could store it (not JSON, a lone surrogate, a NUL, too deep)."""
    try:
        check_value(cause, "The cause", nul=True)
        dumps(cause, "The cause")
    except (TypeError, ValueError):
        return {"name": "WorkflowError", "message": storable_text(repr(cause))}
    return cause


def error_from_dict(data: dict[str, Any]) -> errors.WorkflowError:
    """An exception object for a stored error, of the package's class of that name if any."""
    name = data.get("name", "WorkflowError")
    message = data.get("message", "")
    if name == "StepFailedError":
        return errors.StepFailedError(
            message,
            step=data.get("step", ""),
            attempts=data.get("attempts", 0),
            cause=data.get("cause"),
            traceback=data.get("traceback"),
        )
    cls = getattr(errors, name, None)
    if (
        isinstance(cls, type)
        and issubclass(cls, errors.WorkflowError)
        and cls not in (errors.ChildWorkflowFailedError, errors.WorkflowResultTimeoutError)
    ):
        if issubclass(cls, errors.WorkflowFailedError):
            return cls(message, cause=data.get("cause"))
        return cls(message)
    error = errors.WorkflowError(message)
    error.name = name  # type: ignore[attr-defined]
    return error


def step_failed(
    name: str, attempts: int, cause: BaseException, traceback: str | None = None
) -> errors.StepFailedError:
    """The StepFailedError of a step that gave up after `attempts`, raising `cause` last (with
    `traceback`, formatted, when it has one)."""
    serialized = serialize_error(cause)
    return errors.StepFailedError(
        f'Step "{name}" failed after {attempts} attempt{"s" if attempts != 1 else ""}: '
        f"{serialized['message']}",
        step=name,
        attempts=attempts,
        cause={"name": serialized["name"], "message": serialized["message"]},
        traceback=traceback,
    )


def step_failed_from(name: str, entry: dict[str, Any]) -> errors.StepFailedError:
    """The StepFailedError of a step the journal records as failed, raised again on replay."""
    cause = entry.get("error") or {}
    attempts = entry.get("attempt") or 0
    return errors.StepFailedError(
        f'Step "{name}" failed after {attempts} attempt{"s" if attempts != 1 else ""}: '
        f"{cause.get('message', '')}",
        step=name,
        attempts=attempts,
        cause={"name": cause.get("name"), "message": cause.get("message")},
        traceback=cause.get("traceback"),
    )


def check_name(name: Any, what: str) -> str:
    """`name`, the journal key of a step, sleep, wait or commit point (`what`); raises
    WorkflowDefinitionError for one that is not a non-empty string."""
    if not isinstance(name, str) or not name:
        raise errors.WorkflowDefinitionError(f"A {what} needs a non-empty name, got {name!r}.")
    return name
