"""What the admin pages share: status badges, readable JSON, links between rows."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.contrib.admin.utils import quote
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator
from django.utils.timezone import localtime

from ..engine.journal import COMPENSATION_PREFIX
from ..errors import WorkflowPayloadError
from ..models import Status
from ..store import payloads

# One colour per status (instances and journal entries share the names). A guard test checks
# that every Status has one, so a new status cannot show up uncoloured.
STATUS_COLOURS: dict[str, str] = {
    Status.PENDING: "#64748b",
    Status.RUNNING: "#2563eb",
    Status.SUSPENDED: "#7c3aed",
    Status.COMPENSATING: "#d97706",
    Status.COMPLETED: "#15803d",
    Status.FAILED: "#dc2626",
    Status.CANCELLED: "#78716c",
    Status.COMPENSATION_FAILED: "#9d174d",
}
UNKNOWN_COLOUR = "#94a3b8"


def status_badge(status: str) -> SafeString:
    """A coloured pill with the status's name."""
    colour = STATUS_COLOURS.get(status, UNKNOWN_COLOUR)
    return format_html(
        '<span class="dw-badge" style="background-color: {}">{}</span>', colour, status
    )


def decoded(field: str, stored: Any, at: str) -> Any:
    """A stored payload as the admin shows it: decoded by the CODEC setting, or, when the codec
    cannot read it, a note saying why (an error keeps its name)."""
    try:
        return payloads.decode_value(field, stored, at)
    except WorkflowPayloadError as error:
        note = f"(unreadable: {error})"
        if field == "error" and isinstance(stored, dict):
            return {"name": stored.get("name"), "message": note}
        return note


def decoded_field(obj: Any, field: str) -> Any:
    """An instance's payload field, decoded for display."""
    return decoded(field, getattr(obj, field), payloads.instance_at(obj.pk, field))


def custom_status_short(obj: Any) -> str:
    """An instance's custom status in a column: decoded, as text, cut at 24 characters (the
    list fits a 1,400 pixel window; the page shows it whole)."""
    value = decoded_field(obj, "custom_status")
    if value is None:
        return "-"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return Truncator(text).chars(24)


def short_time(value: datetime | None) -> SafeString:
    """A time in a list's column: "2026-01-04 00:00" in the site's time zone, the whole time
    in its title; narrower than Django's "Jan. 4, 2026, midnight"."""
    if value is None:
        return mark_safe('<span class="dw-none">-</span>')  # noqa: S308 - a constant
    local = localtime(value)
    return format_html(
        '<time datetime="{}" title="{}">{}</time>',
        value.isoformat(),
        local.strftime("%Y-%m-%d %H:%M:%S %Z"),
        local.strftime("%Y-%m-%d %H:%M"),
    )


def decoded_document(instance_id: str, name: str, document: dict[str, Any]) -> dict[str, Any]:
    """A journal entry's document with its payload fields decoded for display."""
    return {
        key: decoded(key, value, payloads.document_at(instance_id, name, key))
        if key in payloads.DOCUMENT_FIELDS
        else value
        for key, value in document.items()
    }


def pretty_json(value: Any) -> SafeString:
    """A JSON value, indented, in a <pre>."""
    if value is None:
        return mark_safe('<span class="dw-none">-</span>')  # noqa: S308 - a constant
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    return format_html('<pre class="dw-json">{}</pre>', text)


def change_url(model: type[Any], pk: Any) -> str:
    meta = model._meta
    return reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[quote(pk)])


def changelist_url(model: type[Any], **filters: str) -> str:
    meta = model._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
    return f"{url}?{urlencode(filters)}" if filters else url


def readable_name(name: str) -> str:
    """A journal entry's name as a person reads it: "undo reserve-stock" for the compensation
    journaled as "$compensate:reserve-stock" (the stored name does not change)."""
    if name.startswith(COMPENSATION_PREFIX):
        return f"undo {name[len(COMPENSATION_PREFIX) :]}"
    return name
