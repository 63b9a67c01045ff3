"""Which stored fields hold the application's data, encoded by the CODEC setting on the way in
and decoded on the way out. Without a codec every function here hands values through.

Encoded: instances' input, output, error (all but its name), custom status and cancel reason;
journal entries' result, progress and error; signals' payloads. Readable, because the store
matches, filters, orders or counts on them: ids, names, versions, statuses, keys, priorities,
links, journal entry names, times and error names.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from .. import codecs
from ..errors import WorkflowPayloadError

if TYPE_CHECKING:
    from ..models import Signal, WorkflowInstance
    from .instances import InstanceWrite

INSTANCE_FIELDS = ("input", "output", "error", "custom_status", "cancel_reason")
DOCUMENT_FIELDS = ("result", "progress", "error")
_ERROR_DATA = "data"  # an encoded error: {"name": ..., "data": "$wf1:..."}


def instance_at(id: str, field: str) -> str:
    return codecs.where("instance", id, field)


def document_at(instance_id: str, name: str, field: str) -> str:
    return codecs.where("journal", instance_id, name, field)


def signal_at(name: str, key: str | None, dedupe_id: str | None) -> str:
    return codecs.where("signal", name, key, dedupe_id, "payload")


# -- values and errors ---------------------------------------------------------------------------


def encode_value(field: str, value: Any, at: str) -> Any:
    if field == "error" and isinstance(value, dict) and codecs.configured_codecs():
        rest = {k: v for k, v in value.items() if k != "name"}
        return {"name": value.get("name"), _ERROR_DATA: codecs.encode(rest, at)}
    return codecs.encode(value, at)


def decode_value(field: str, stored: Any, at: str) -> Any:
    if (
        field == "error"
        and isinstance(stored, dict)
        and codecs.is_encoded(stored.get(_ERROR_DATA))
        and set(stored) == {"name", _ERROR_DATA}
    ):
        return {"name": stored["name"], **codecs.decode(stored[_ERROR_DATA], at)}
    return codecs.decode(stored, at)


# -- instances -----------------------------------------------------------------------------------


def encode_instance(instance: WorkflowInstance) -> WorkflowInstance:
    """Encode a new instance's payload fields in place (before its INSERT)."""
    for field in INSTANCE_FIELDS:
        value = getattr(instance, field)
        setattr(instance, field, encode_value(field, value, instance_at(instance.pk, field)))
    return instance


def decode_instance(instance: WorkflowInstance, *, strict: bool = True) -> WorkflowInstance:
    """Decode a loaded instance's payload fields in place. Strict: raise WorkflowPayloadError
    when one cannot be read (the instance left as loaded); otherwise note the error in
    `unreadable` and leave the instance without its payloads, every one of them None but its
    error's name, which stays readable."""
    instance.unreadable = None  # type: ignore[attr-defined]
    decoded: dict[str, Any] = {}
    for field in INSTANCE_FIELDS:
        try:
            decoded[field] = decode_value(
                field, getattr(instance, field), instance_at(instance.pk, field)
            )
        except WorkflowPayloadError as error:
            if strict:
                raise
            instance.unreadable = error  # type: ignore[attr-defined]
    if instance.unreadable is not None:  # type: ignore[attr-defined]
        name = instance.error.get("name") if isinstance(instance.error, dict) else None
        decoded = dict.fromkeys(INSTANCE_FIELDS)
        decoded["error"] = None if name is None else {"name": name}
    for field, value in decoded.items():
        setattr(instance, field, value)
    return instance


def encode_changes(id: str, changes: dict[str, Any]) -> dict[str, Any]:
    return {
        name: encode_value(name, value, instance_at(id, name)) if name in INSTANCE_FIELDS else value
        for name, value in changes.items()
    }


def decode_reason(id: str, stored: str | None) -> str | None:
    """A cancel reason; one that cannot be read becomes a message saying so (a cancel must
    still go through)."""
    try:
        return decode_value("cancel_reason", stored, instance_at(id, "cancel_reason"))  # type: ignore[no-any-return]
    except WorkflowPayloadError as error:
        return f"(a reason the codec cannot read: {error})"


# -- journal documents ---------------------------------------------------------------------------


def encode_document(instance_id: str, name: str, document: dict[str, Any]) -> dict[str, Any]:
    if not codecs.configured_codecs():
        return document
    encoded = dict(document)
    for field in DOCUMENT_FIELDS:
        if encoded.get(field) is not None:
            at = document_at(instance_id, name, field)
            encoded[field] = encode_value(field, encoded[field], at)
    return encoded


def decode_document(instance_id: str, name: str, document: dict[str, Any]) -> dict[str, Any]:
    decoded = None
    for field in DOCUMENT_FIELDS:
        stored = document.get(field)
        if codecs.is_encoded(stored) or (
            isinstance(stored, dict) and codecs.is_encoded(stored.get(_ERROR_DATA))
        ):
            decoded = decoded or dict(document)
            decoded[field] = decode_value(field, stored, document_at(instance_id, name, field))
    return document if decoded is None else decoded


def encode_entries(instance_id: str, entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {name: encode_document(instance_id, name, doc) for name, doc in entries.items()}


def decode_journal(
    instance_id: str, entries: list[tuple[str, dict[str, Any]]]
) -> list[tuple[str, dict[str, Any]]]:
    return [(name, decode_document(instance_id, name, doc)) for name, doc in entries]


def encode_write(id: str, write: InstanceWrite) -> InstanceWrite:
    """The lease holder's write with its payloads encoded (the signal it may record is encoded
    by record_signal)."""
    if not codecs.configured_codecs():
        return write
    return dataclasses.replace(
        write,
        entries=encode_entries(id, write.entries),
        guarded_entries=encode_entries(id, write.guarded_entries),
        changes=encode_changes(id, write.changes),
    )


# -- signals -------------------------------------------------------------------------------------


def decode_signal(signal: Signal) -> Signal:
    signal.payload = codecs.decode(
        signal.payload, signal_at(signal.name, signal.key, signal.dedupe_id)
    )
    return signal
