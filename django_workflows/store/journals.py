"""Stored instances with their journals, read as they stand and decoded, in batches: what the
replay check (checkworkflows --replay) and the export (exportworkflow) read. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q

from ..errors import WorkflowPayloadError
from ..models import FINISHED, UNFINISHED, JournalEntry, WorkflowInstance
from . import payloads


@dataclass
class InstanceJournal:
    """One instance as stored, its payloads decoded, and its journal in first-write order.
    `unreadable`: the codec could not read one of its payloads (the rest is then not decoded).
    `malformed`: what is wrong with a journal entry that is not a JSON object (a row written
    by something else than the engine); that entry is kept as stored."""

    instance: WorkflowInstance
    journal: list[tuple[str, dict[str, Any]]]
    unreadable: WorkflowPayloadError | None = None
    malformed: str | None = None


def read_journal(using: str, id: str) -> InstanceJournal | None:
    """The instance `id` with its journal, decoded; None when there is none. An instance the
    codec cannot read comes back with `unreadable` set."""
    instance = WorkflowInstance.objects.using(using).filter(pk=id).first()
    if instance is None:
        return None
    rows = JournalEntry.objects.using(using).filter(instance_id=id).order_by("id")
    return _decoded(instance, list(rows.values_list("name", "document")))


def read_journals(
    using: str,
    *,
    finished_since: datetime | None,
    workflow: str | None,
    limit: int | None,
    batch_size: int,
) -> Iterator[InstanceJournal]:
    """Every unfinished instance (and those finished, by their last write, at `finished_since`
    or later), of `workflow` if given, in id order, at most `limit`; read `batch_size`
    instances and their journals at a time, so memory holds one batch, not the table."""
    wanted = Q(status__in=UNFINISHED)
    if finished_since is not None:
        wanted |= Q(status__in=FINISHED, updated_at__gte=finished_since)
    rows = WorkflowInstance.objects.using(using).filter(wanted)
    if workflow is not None:
        rows = rows.filter(workflow=workflow)
    after: str | None = None
    left = limit
    while left is None or left > 0:
        page = rows if after is None else rows.filter(pk__gt=after)
        size = batch_size if left is None else min(batch_size, left)
        batch = list(page.order_by("pk")[:size])
        if not batch:
            return
        journals: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        entries = (
            JournalEntry.objects.using(using)
            .filter(instance_id__in=[instance.pk for instance in batch])
            .order_by("id")
            .values_list("instance_id", "name", "document")
        )
        for instance_id, name, document in entries.iterator():
            journals.setdefault(instance_id, []).append((name, document))
        for instance in batch:
            yield _decoded(instance, journals.get(instance.pk, []))
        after = batch[-1].pk
        if left is not None:
            left -= len(batch)
        if len(batch) < size:
            return


def _decoded(
    instance: WorkflowInstance, entries: list[tuple[str, dict[str, Any]]]
) -> InstanceJournal:
    malformed = next(
        (
            f'its journal entry "{name}" is not a JSON object but a {type(document).__name__} '
            f"({_cut(document)}): it was not written by the engine. Restore the entry from a "
            f"backup, or delete the instance."
            for name, document in entries
            if not isinstance(document, dict)
        ),
        None,
    )
    try:
        payloads.decode_instance(instance)
        journal = [
            (name, payloads.decode_document(instance.pk, name, document))
            if isinstance(document, dict)
            else (name, document)
            for name, document in entries
        ]
    except WorkflowPayloadError as error:
        return InstanceJournal(instance, entries, unreadable=error, malformed=malformed)
    return InstanceJournal(instance, journal, malformed=malformed)


def _cut(document: Any) -> str:
    shown = repr(document)
    return shown if len(shown) <= 60 else f"{shown[:57]}..."
