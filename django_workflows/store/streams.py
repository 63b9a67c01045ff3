"""Streams (ctx.stream(), step.stream()): their items appended under the stream's row lock,
read in offset order, and their heads (items, bytes, closed) for get_status().

One stream per instance and name, whichever side writes it: its WorkflowStream row, made by the
first append or close, is locked by every append, which takes the next offsets under the lock,
so offsets are 1, 2, ... without gaps. Each item's value is encoded by the codec, stored at
`("stream", instance id, name, offset, "value")`.

An append wakes the readers when it commits: in this process at once (wakeups.value_published),
in others where the database has notifications (PostgreSQL's NOTIFY on the ends channel, sent
only when a reader marked the instance awaited). Elsewhere readers poll.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction

from .. import codecs
from ..conf import get_settings
from ..errors import WorkflowStateError, WorkflowStreamFullError
from ..jsonvalues import size
from ..models import WorkflowInstance, WorkflowStream, WorkflowStreamItem
from . import payloads, wakeups
from .backends import backend
from .deadlocks import retries_deadlocks


@dataclass(frozen=True)
class Appended:
    """What an append left: the last offset it wrote, and the stream's items and bytes."""

    offset: int
    items: int
    bytes: int


def item_at(id: str, name: str, offset: int) -> str:
    """Where an item's value is stored, for the codec."""
    return codecs.where("stream", id, name, offset, "value")


def _locked_head(using: str, id: str, name: str, now: datetime) -> WorkflowStream:
    """The stream's row, made if it is new, locked until the transaction ends."""
    heads = WorkflowStream.objects.using(using).select_for_update()
    head = heads.filter(instance_id=id, name=name).first()
    if head is None:
        backend(using).insert_ignore(WorkflowStream(instance_id=id, name=name, updated_at=now))
        head = heads.get(instance_id=id, name=name)
    return head


def _wake_readers(using: str, id: str) -> None:
    """At the commit, wake the readers of instance `id`'s streams (see the module's doc)."""
    awaited = WorkflowInstance.objects.using(using).filter(pk=id).values_list("awaited", flat=True)
    if any(awaited):
        backend(using).notify_ended(id)
    transaction.on_commit(lambda: wakeups.value_published(id), using=using)


@retries_deadlocks
def append(
    using: str, id: str, name: str, values: Sequence[Any], *, attempt: int | None, now: datetime
) -> Appended:
    """Append `values` (JSON, checked) to instance `id`'s stream `name`, in one store
    transaction (the caller's, if one is open). WorkflowStreamFullError when they would take it past
    STREAMS' MAX_ITEMS or MAX_BYTES, WorkflowStateError when it is closed: then nothing is
    written."""
    limits = get_settings().streams
    sizes = [size(value) for value in values]
    with backend(using).write_transaction():
        head = _locked_head(using, id, name, now)
        if head.closed:
            raise WorkflowStateError(
                f'The stream "{name}" of instance {id!r} is closed: nothing more can be '
                "written to it."
            )
        items, total = head.items + len(values), head.bytes + sum(sizes)
        if items > limits.max_items or total > limits.max_bytes:
            raise WorkflowStreamFullError(
                f'The stream "{name}" of instance {id!r} holds {head.items} items '
                f"({head.bytes} bytes): {len(values)} more ({sum(sizes)} bytes) would take it "
                f"past STREAMS' MAX_ITEMS ({limits.max_items}) or MAX_BYTES "
                f"({limits.max_bytes}).",
                stream=name,
            )
        if values:
            WorkflowStreamItem.objects.using(using).bulk_create(
                [
                    WorkflowStreamItem(
                        instance_id=id,
                        name=name,
                        offset=offset,
                        value=payloads.encode_value("value", value, item_at(id, name, offset)),
                        attempt=attempt,
                        created_at=now,
                    )
                    for offset, value in enumerate(values, head.items + 1)
                ]
            )
            WorkflowStream.objects.using(using).filter(pk=head.pk).update(
                items=items, bytes=total, updated_at=now
            )
            _wake_readers(using, id)
    return Appended(offset=items, items=items, bytes=total)


@retries_deadlocks
def close(using: str, id: str, name: str, *, now: datetime) -> None:
    """Close instance `id`'s stream `name` (made if new): readers stop at its last item."""
    with backend(using).write_transaction():
        head = _locked_head(using, id, name, now)
        if not head.closed:
            WorkflowStream.objects.using(using).filter(pk=head.pk).update(
                closed=True, updated_at=now
            )
            _wake_readers(using, id)


@dataclass(frozen=True)
class StoredItem:
    offset: int
    value: Any
    attempt: int | None
    created_at: datetime


def read(using: str, id: str, name: str, *, after: int, limit: int) -> list[StoredItem]:
    """Up to `limit` items of instance `id`'s stream `name` from offset `after` + 1, in order,
    decoded; WorkflowPayloadError when the codec cannot read one."""
    rows = (
        WorkflowStreamItem.objects.using(using)
        .filter(instance_id=id, name=name, offset__gt=after)
        .order_by("offset")
        .values_list("offset", "value", "attempt", "created_at")[:limit]
    )
    return [
        StoredItem(
            offset, payloads.decode_value("value", value, item_at(id, name, offset)), attempt, at
        )
        for offset, value, attempt, at in rows
    ]


def is_closed(using: str, id: str, name: str) -> bool:
    return (
        WorkflowStream.objects.using(using).filter(instance_id=id, name=name, closed=True).exists()
    )


def heads(using: str, ids: Iterable[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """For each instance of `ids` with streams: name to {"items": n, "closed": bool}, in the
    order the streams were made."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    rows = (
        WorkflowStream.objects.using(using)
        .filter(instance_id__in=list(ids))
        .order_by("id")
        .values_list("instance_id", "name", "items", "closed")
    )
    for instance_id, name, items, closed in rows:
        found.setdefault(instance_id, {})[name] = {"items": items, "closed": closed}
    return found


def latest(
    using: str, id: str, count: int
) -> list[tuple[str, int, bool, list[tuple[int, Any, int | None, datetime]]]]:
    """Instance `id`'s streams, in the order they were made: (name, items, closed, its last
    `count` items as (offset, stored value, attempt, created_at), oldest first). The values
    are as stored: decode them with item_at()."""
    found = []
    heads = WorkflowStream.objects.using(using).filter(instance_id=id).order_by("id")
    for name, items, closed in heads.values_list("name", "items", "closed"):
        rows = (
            WorkflowStreamItem.objects.using(using)
            .filter(instance_id=id, name=name)
            .order_by("-offset")
            .values_list("offset", "value", "attempt", "created_at")[:count]
        )
        found.append((name, items, closed, list(reversed(rows))))
    return found
