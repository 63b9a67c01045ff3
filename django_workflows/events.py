"""The workflow_event Django signal: one WorkflowEvent per thing that happens to an instance.

Not to be confused with workflow signals (`signal()`), which wake waiting instances.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.dispatch import Signal

logger = logging.getLogger("django_workflows")

workflow_event = Signal()
"""Sent with `event=WorkflowEvent(...)` for every event of EVENT_TYPES."""

EVENT_TYPES = (
    "workflow-started",
    "workflow-resumed",
    "workflow-suspended",
    "step-completed",
    "step-failed",
    "signal-received",
    "signal-timed-out",
    "workflow-compensating",
    "step-compensated",
    "workflow-completed",
    "workflow-failed",
    "workflow-cancelled",
    "workflow-compensation-failed",
    "journal-large",
    "value-set",
    "attributes-set",
    "patch-marked",
    "workflow-retried",
    "workflow-forked",
    "workflow-deleted",
    "custom-status",
    "child-started",
    "schedule-skipped",
    "breakpoint-resumed",
    "task-completed",
    "update-accepted",
    "update-rejected",
    "webhook-received",
    "workflow-continued-as-new",
)

_WARNINGS = {"workflow-compensation-failed", "journal-large"}
_DEBUG = {
    "step-completed",
    "custom-status",
    "workflow-suspended",
    "workflow-resumed",
    "value-set",
    "attributes-set",
    "patch-marked",
}
PAYLOAD_DATA: dict[str, frozenset[str]] = {
    "workflow-completed": frozenset({"output"}),
    "value-set": frozenset({"value"}),
    "custom-status": frozenset({"status"}),
}
"""The `data` keys of each event type that hold a payload (large, and encrypted at rest by a
codec): left out of the logs and of OpenTelemetry's span events, kept for receivers."""
_NO_PAYLOAD: frozenset[str] = frozenset()


@dataclass(frozen=True)
class WorkflowEvent:
    """`type`, the instance's `id`, `workflow`, `version`, the engine's time `at`, and `data`."""

    type: str
    id: str
    workflow: str
    version: int | None
    at: datetime
    data: dict[str, Any] = field(default_factory=dict)


def _level(type: str) -> int:
    return (
        logging.WARNING if type in _WARNINGS else logging.DEBUG if type in _DEBUG else logging.INFO
    )


def _shown(value: Any, key: str | None = None) -> str:
    """A `data` value as the event's log line shows it, on that one line: a time in ISO 8601, an
    error as its name and message (a step's failure logged its traceback already), anything else
    as its repr."""
    if isinstance(value, datetime):
        return value.isoformat()
    if key == "error" and isinstance(value, dict) and {"name", "message"} <= value.keys():
        return f"{value['name']}: {' '.join(str(value['message']).splitlines())}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_shown(v, k)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return repr(value)


def wanted(type: str) -> bool:
    """Whether an event of `type` would be logged or received: emit() does nothing when not,
    so a caller may skip building it (a drain emits several per workflow)."""
    # send_robust() itself returns at once on an empty receivers list.
    return bool(workflow_event.receivers) or logger.isEnabledFor(_level(type))


def emit(
    type: str, *, id: str, workflow: str, version: int | None, at: datetime, **data: Any
) -> None:
    """Log the event and send workflow_event; a failing receiver is logged, never raised."""
    event = WorkflowEvent(type=type, id=id, workflow=workflow, version=version, at=at, data=data)
    level = _level(type)
    if logger.isEnabledFor(level):
        payloads = PAYLOAD_DATA.get(type, _NO_PAYLOAD)
        details = " ".join(
            f"{key}={_shown(value, key)}" for key, value in data.items() if key not in payloads
        )
        logger.log(level, "%s %s (%s@%s) %s", type, id, workflow, version, details)
    for receiver, response in workflow_event.send_robust(sender=WorkflowEvent, event=event):
        if isinstance(response, Exception):
            logger.error("workflow_event receiver %r failed: %r", receiver, response)
