"""A workflow run to its end, and its journal, for the tests of the store's writes."""

from __future__ import annotations

from typing import Any

import django_workflows as wf
from django_workflows.models import JournalEntry


def journal(id: str) -> list[tuple[str, Any]]:
    """The instance's journal entries, in write order: (name, status)."""
    return list(
        JournalEntry.objects.filter(instance_id=id)
        .order_by("id")
        .values_list("name", "document__status")
    )


def run(workflow: Any, id: str) -> list[tuple[str, Any]]:
    """Start `workflow` with 20 as `id`, drain, check it returned 42; its journal."""
    wf.start(workflow, 20, id=id)
    wf.drain()
    assert wf.get_status(id).status == "completed"
    assert wf.get_status(id).output == 42
    return journal(id)
