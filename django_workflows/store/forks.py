"""Forks: a new instance created together with the part of another's journal it starts from.

`django_workflows.fork()` (client/forks.py) decides what is copied; this module writes it, in one
transaction that joins the caller's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction

from ..models import JournalEntry, WorkflowInstance
from . import attributes as searchable
from . import payloads
from .instances import create_instance
from .signals import record_signal


def create_fork(
    using: str,
    instance: WorkflowInstance,
    entries: list[tuple[str, dict[str, Any]]],
    signals: list[dict[str, Any]],
    *,
    now: datetime,
) -> tuple[WorkflowInstance, bool]:
    """Insert the pending instance `instance` (its payloads encoded already) unless one with
    its id exists, as create_instance() does; when this call created it, also write its journal
    `entries` (decoded documents, encoded here for their new place) in their order, which
    becomes their first-write order, and record `signals` (name, key, dedupe_id, payload) after
    its signal cursor, for it to see. Returns the stored instance and whether it was created."""
    with transaction.atomic(using=using, savepoint=False):
        stored, created = create_instance(using, instance)
        if not created:
            return stored, False
        if entries:
            JournalEntry.objects.using(using).bulk_create(
                [
                    JournalEntry(
                        instance_id=instance.pk,
                        name=name,
                        document=payloads.encode_document(instance.pk, name, document),
                    )
                    for name, document in entries
                ]
            )
        for signal in signals:
            record_signal(using, **signal, now=now)
        if instance.forked_from:
            # The copied journal replays the original's ctx.set_attributes() without writing.
            searchable.copy(using, instance.forked_from, instance.pk, instance.created_at)
        return stored, True


def fork_entry(using: str, id: str, name: str) -> dict[str, Any] | None:
    """The plain document of instance `id`'s journal entry `name`, or None (its payload fields
    stay as stored: for the fields the store keeps readable)."""
    document = (
        JournalEntry.objects.using(using)
        .filter(instance_id=id, name=name)
        .values_list("document", flat=True)
        .first()
    )
    return document if isinstance(document, dict) else None
