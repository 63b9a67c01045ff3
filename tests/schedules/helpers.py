"""What the schedule tests share."""

from __future__ import annotations

from datetime import UTC, datetime

from django_workflows.models import WorkflowInstance


def started(schedule_id: str) -> list[str]:
    return list(
        WorkflowInstance.objects.filter(schedule_id=schedule_id)
        .order_by("scheduled_at")
        .values_list("id", flat=True)
    )


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)
