"""Which stored fields hold the application's data, encoded by the CODEC setting on the way in
and decoded on the way out. Without a codec every function here hands values through.

Encoded: instances' input, output, error, custom status and cancel reason; journal entries'
result, progress, error, logs and earlier_logs (step.log's lines, of the latest attempt and of
those before); signals' payloads. Readable, because the
store matches, filters, orders or counts on them: ids, names, versions, statuses, keys, priorities, links, journal entry
names, times and error names (kept beside the encoded error, which holds the name too).

Each payload is encoded with where it is stored (`*_at` below), which names its row and field:
one moved to another row or field fails to decode. A signal's place names its id, known only
once its row is inserted, so its payload is written by an UPDATE after the INSERT.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from .. import codecs
from ..errors import WorkflowPayloadError

if TYPE_CHECKING:
    from ..models import Signal, WorkflowInstance
    from .backends.writes import InstanceWrite

INSTANCE_FIELDS = ("input", "output", "error", "custom_status", "cancel_reason")
DOCUMENT_FIELDS = ("result", "progress", "error", "logs", "earlier_logs")
_ERROR_DATA = "data"  # an encoded error: {"name": ..., "data": "$wf1:..."}
_ENVELOPE = {"name", _ERROR_DATA}


def instance_at(id: str, field: str) -> str:
    return codecs.where("instance", id, field)


def document_at(instance_id: str, name: str, field: str) -> str:
    return codecs.where("journal", instance_id, name, field)


def signal_at(signal: Signal) -> str:
    """Where a signal's payload is: its row (by id) as well as its name, key and dedupe id."""
    return codecs.where("signal", signal.pk, signal.name, signal.key, signal.dedupe_id, "payload")


# -- values and errors ---------------------------------------------------------------------------


def _envelope_shaped(value: Any) -> bool:
    return isinstance(value, dict) and value.keys() == _ENVELOPE


def encode_value(field: str, value: Any, at: str) -> Any:
    """`value` as stored in `field` at `at`. An error with a name keeps its name readable
    beside the encoded error, which holds the name too (so that a changed name is caught)."""
    if field == "error" and isinstance(value, dict) and "name" in value:
        if codecs.configured_codecs():
            return {"name": value["name"], _ERROR_DATA: codecs.encode(value, at)}
        if _envelope_shaped(value):  # a plain error that looks encoded: its data escaped
            return {"name": value["name"], _ERROR_DATA: codecs.escape(value[_ERROR_DATA])}
    return codecs.encode(value, at)


def _plain(field: str, stored: Any) -> bool:
    """Whether decode_value() hands `stored` back as it is, whatever the codecs: no string
    that starts with `$wf`, no encoded error's envelope. Then where it is stored, which only
    a codec or an error message reads, need not be spelled out (codecs.where() is JSON)."""
    if isinstance(stored, str):
        return not stored.startswith(codecs.RESERVED)
    return not (field == "error" and _envelope_shaped(stored))


def _sealing() -> bool:
    """Whether payloads are encoded (a codec configured): only then does encode_value() read
    where a payload is stored."""
    return bool(codecs.configured_codecs())


def decode_value(field: str, stored: Any, at: str) -> Any:
    """The value stored in `field` at `at`; WorkflowPayloadError when it cannot be read."""
    if field == "error" and _envelope_shaped(stored):
        data = stored[_ERROR_DATA]
        if codecs.is_encoded(data):
            return _sealed_error(stored["name"], codecs.decode(data, at), at)
        return {"name": stored["name"], _ERROR_DATA: codecs.decode(data, at)}
    return codecs.decode(stored, at)


def _sealed_error(name: Any, sealed: Any, at: str) -> dict[str, Any]:
    if not isinstance(sealed, dict):
        raise WorkflowPayloadError(f"The error at {at} does not decode to an error.")
    if "name" not in sealed:  # encoded by earlier versions, which left the name out
        return {"name": name, **sealed}
    if sealed["name"] != name:
        raise WorkflowPayloadError(
            f"The error at {at} reads {name!r}, but was encoded as {sealed['name']!r}: "
            f"the error's name was changed."
        )
    return sealed


# -- instances -----------------------------------------------------------------------------------


def encode_instance(instance: WorkflowInstance) -> WorkflowInstance:
    """Encode a new instance's payload fields in place (before its INSERT)."""
    sealing = _sealing()
    for field in INSTANCE_FIELDS:
        value = getattr(instance, field)
        at = instance_at(instance.pk, field) if sealing else ""
        setattr(instance, field, encode_value(field, value, at))
    return instance


def decode_instance(instance: WorkflowInstance, *, strict: bool = True) -> WorkflowInstance:
    """Decode a loaded instance's payload fields in place. Strict: raise WorkflowPayloadError
    when one cannot be read (the instance left as loaded); otherwise note the error in
    `unreadable` and leave the instance without its payloads, every one of them None but its
    error's name, which stays readable."""
    instance.unreadable = None  # type: ignore[attr-defined]
    decoded: dict[str, Any] = {}
    for field in INSTANCE_FIELDS:
        stored = getattr(instance, field)
        if _plain(field, stored):
            decoded[field] = stored
            continue
        try:
            decoded[field] = decode_value(field, stored, instance_at(instance.pk, field))
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
    sealing = _sealing()
    return {
        name: encode_value(name, value, instance_at(id, name) if sealing else "")
        if name in INSTANCE_FIELDS
        else value
        for name, value in changes.items()
    }


def decode_reason(id: str, stored: str | None) -> str | None:
    """A cancel reason; one that cannot be read becomes a message saying so (a cancel must
    still go through)."""
    if _plain("cancel_reason", stored):
        return stored
    try:
        return decode_value("cancel_reason", stored, instance_at(id, "cancel_reason"))  # type: ignore[no-any-return]
    except WorkflowPayloadError as error:
        return f"(a reason the codec cannot read: {error})"


# -- journal documents ---------------------------------------------------------------------------


def encode_document(instance_id: str, name: str, document: dict[str, Any]) -> dict[str, Any]:
    """A journal document as stored: its payload fields encoded (the document itself when
    nothing changes, as without a codec but for strings that start with `$wf`)."""
    encoded = None
    sealing = _sealing()
    for field in DOCUMENT_FIELDS:
        value = document.get(field)
        if value is not None:
            at = document_at(instance_id, name, field) if sealing else ""
            stored = encode_value(field, value, at)
            if stored is not value:
                encoded = encoded or dict(document)
                encoded[field] = stored
    return document if encoded is None else encoded


def decode_document(instance_id: str, name: str, document: dict[str, Any]) -> dict[str, Any]:
    """A stored journal document with its payload fields decoded (WorkflowPayloadError when
    one cannot be read)."""
    decoded = None
    for field in DOCUMENT_FIELDS:
        stored = document.get(field)
        if stored is not None and not _plain(field, stored):
            value = decode_value(field, stored, document_at(instance_id, name, field))
            if value is not stored:
                decoded = decoded or dict(document)
                decoded[field] = value
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
    return dataclasses.replace(
        write,
        entries=encode_entries(id, write.entries),
        guarded_entries=encode_entries(id, write.guarded_entries),
        changes=encode_changes(id, write.changes),
    )


# -- signals -------------------------------------------------------------------------------------


def seals_signal(payload: Any) -> bool:
    """Whether a signal's payload is encoded, and so bound to its row's id: stored by an UPDATE
    once the INSERT gave the row its id."""
    return payload is not None and bool(codecs.configured_codecs())


def encode_signal(signal: Signal, payload: Any) -> Any:
    """The payload as stored in `signal`'s row (which has its id when seals_signal())."""
    return codecs.encode(payload, signal_at(signal))


def decode_signal(signal: Signal) -> Signal:
    """The signal with its payload decoded; WorkflowPayloadError, naming the row, when it
    cannot be read (changed, or swapped with another row's)."""
    signal.payload = codecs.decode(signal.payload, signal_at(signal))
    return signal
