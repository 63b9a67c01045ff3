"""An instance with its journal as one JSON document: what `manage.py exportworkflow` writes and
`testing.replay()` reads back.

The document holds the instance's payloads (input, output, error, custom status, the journal's
results) decoded: with a codec configured, an export holds in clear what the database holds
encrypted.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..conf import database_alias
from ..errors import WorkflowNotFoundError
from ..models import WorkflowInstance
from ..store.journals import read_journal

FORMAT = "django-workflows-export"
FORMAT_VERSION = 1

_TIMES = ("deadline", "scheduled_at", "created_at", "updated_at")
_FIELDS = (
    "id",
    "workflow",
    "version",
    "status",
    "generation",
    "forked_from",
    "input",
    "output",
    "error",
    "custom_status",
    "parent_id",
    "parent_close",
    "schedule_id",
    "scheduled_at",
    "priority",
    "queue",
    "concurrency_key",
    "rate_limit_key",
    "fair_key",
    "runs",
    "signal_cursor",
    "deadline",
    "cancel_requested",
    "terminate_requested",
    "cancel_reason",
    "created_at",
    "updated_at",
)


def export_instance(id: str, *, using: str | None = None) -> dict[str, Any]:
    """The instance `id` and its journal entries, in first-write order, as a JSON-ready dict
    with its payloads decoded. Raises TypeError for an id that is not a string,
    WorkflowNotFoundError for an unknown one, WorkflowPayloadError when the codec cannot read
    one of its payloads."""
    if not isinstance(id, str):
        raise TypeError(f"The instance id must be a string, not {type(id).__name__}.")
    found = read_journal(database_alias(using), id)
    if found is None:
        raise WorkflowNotFoundError(f"No workflow instance {id!r}.")
    if found.unreadable is not None:
        raise found.unreadable
    instance = found.instance
    document: dict[str, Any] = {"format": FORMAT, "format_version": FORMAT_VERSION}
    for field in _FIELDS:
        value = getattr(instance, field)
        document[field] = value.isoformat() if field in _TIMES and value is not None else value
    document["journal"] = [{"name": name, "document": doc} for name, doc in found.journal]
    return document


def read_export(document: Any) -> tuple[WorkflowInstance, list[tuple[str, dict[str, Any]]]]:
    """The instance (unsaved) and its journal entries from an export's dict. Raises TypeError
    for something that is not a dict, ValueError for a dict that is not an export (naming what
    is missing or wrong)."""
    if not isinstance(document, dict):
        raise TypeError(f"An export is a dict, not {type(document).__name__}.")
    if document.get("format") != FORMAT:
        raise ValueError(
            f"Not an export of manage.py exportworkflow: its format is "
            f"{document.get('format')!r}, not {FORMAT!r}."
        )
    if document.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"This export's format_version is {document.get('format_version')!r}; this "
            f"release reads version {FORMAT_VERSION}."
        )
    for field, kind in (("id", str), ("workflow", str), ("version", int), ("journal", list)):
        if not isinstance(document.get(field), kind) or isinstance(document.get(field), bool):
            raise ValueError(f"The export's {field!r} must be a {kind.__name__}.")
    values: dict[str, Any] = {}
    for field in _FIELDS:
        if field in document:
            value = document[field]
            values[field] = _time(field, value) if field in _TIMES else value
    values.setdefault("status", "suspended")
    values["runs"] = values.get("runs") or 0
    values["signal_cursor"] = values.get("signal_cursor") or 0
    values["priority"] = values.get("priority") or 0
    values["queue"] = values.get("queue") or "default"  # an export made before queues
    values["generation"] = values.get("generation") or 0
    values["cancel_requested"] = bool(values.get("cancel_requested"))
    values["terminate_requested"] = bool(values.get("terminate_requested"))
    journal = []
    for index, item in enumerate(document["journal"]):
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("name"), str)
            or not isinstance(item.get("document"), dict)
        ):
            raise ValueError(
                f"The export's journal entry {index} must be a dict with a 'name' (a string) "
                f"and a 'document' (a dict)."
            )
        journal.append((item["name"], item["document"]))
    return WorkflowInstance(**values), journal


def _time(field: str, value: Any) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"The export's {field!r} must be an ISO 8601 time or null, not {value!r}."
        ) from None
    if parsed.tzinfo is None:
        raise ValueError(f"The export's {field!r} must have a time zone: {value!r}.")
    return parsed
