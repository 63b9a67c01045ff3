"""Migration 0008: the attribute rows written before it get their instance's created_at."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

import django_workflows as wf
from django_workflows.models import InstanceAttribute

pytestmark = pytest.mark.django_db(transaction=True)  # ALTER TABLE commits on MySQL

BEFORE = ("django_workflows", "0007_queues_workers")


def test_the_rows_already_there_get_their_instances_created_at():
    call_command("migrate", *BEFORE, verbosity=0)
    try:
        old = MigrationExecutor(connection).loader.project_state(BEFORE).apps
        instances = old.get_model("django_workflows", "WorkflowInstance")
        attributes = old.get_model("django_workflows", "InstanceAttribute")
        for n, day in enumerate([3, 1, 2]):
            created = datetime(2026, 11, day, 8, 30, tzinfo=UTC)
            instances.objects.create(
                id=f"old-{n}", workflow="w", version=1, created_at=created, updated_at=created
            )
            attributes.objects.create(instance_id=f"old-{n}", name="tier", kind="str", text="a")
            attributes.objects.create(instance_id=f"old-{n}", name="n", kind="int", number=n)
    finally:
        call_command("migrate", "django_workflows", verbosity=0)
    rows = InstanceAttribute.objects.order_by("instance_id", "name")
    assert [(r.instance_id, r.name, r.created_at.day) for r in rows] == [
        ("old-0", "n", 3),
        ("old-0", "tier", 3),
        ("old-1", "n", 1),
        ("old-1", "tier", 1),
        ("old-2", "n", 2),
        ("old-2", "tier", 2),
    ]
    found = wf.list_instances(attributes={"tier": "a"})
    assert [s.id for s in found] == ["old-1", "old-2", "old-0"]
