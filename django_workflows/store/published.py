"""Published values (ctx.set_value()): the journal entries that hold them, read for
get_value() and InstanceStatus.values.

Each ctx.set_value() call is one journal entry, `$value:<position>`, whose document holds the
value's `name` (plain, so the store can find it) and the value as its `result` (encoded by the
codec like a step's result). The latest of a name is the entry written last: the highest row id.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import WorkflowPayloadError
from ..models import JournalEntry
from . import payloads

PREFIX = "$value:"
"""The journal names of published values: `$value:<position>`."""


def latest_value(using: str, id: str, name: str) -> tuple[bool, Any]:
    """(True, the value) for the last value `name` instance `id` published, or (False, None)
    when it published none (or the instance does not exist). WorkflowPayloadError when the codec
    cannot read it."""
    row = (
        JournalEntry.objects.using(using)
        .filter(instance_id=id, name__startswith=PREFIX, document__name=name)
        .order_by("-id")
        .values_list("name", "document")
        .first()
    )
    if row is None:
        return False, None
    return True, payloads.decode_document(id, row[0], row[1])["result"]


def latest_values(
    using: str, ids: Iterable[str], *, strict: bool = True
) -> dict[str, dict[str, Any]]:
    """For each instance of `ids` that published values: its values, name to the latest one,
    in the order each name was first published. Not strict: a value the codec cannot read is
    left out (strict: WorkflowPayloadError)."""
    rows = (
        JournalEntry.objects.using(using)
        .filter(instance_id__in=list(ids), name__startswith=PREFIX)
        .order_by("id")
        .values_list("instance_id", "name", "document")
    )
    found: dict[str, dict[str, Any]] = {}
    for instance_id, entry, document in rows:
        try:
            value = payloads.decode_document(instance_id, entry, document)["result"]
        except WorkflowPayloadError:
            if strict:
                raise
            continue
        found.setdefault(instance_id, {})[document["name"]] = value
    return found
