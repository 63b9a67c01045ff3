"""An instance's row as the backend writes and reads it by hand is the row the ORM writes and
the instance the ORM loads: the hand-written insert (start(), a schedule tick's batch; on every database) and the
claim's read-back (SQLite), every column of them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.models.constants import OnConflict

from django_workflows.models import Status, WorkflowInstance
from django_workflows.store import claims
from django_workflows.store.backends import backend
from django_workflows.store.backends.inserts import insert_rows

pytestmark = pytest.mark.django_db(transaction=True)

NOW = datetime(2026, 12, 2, 14, 30, 15, 123456, tzinfo=UTC)


def every_field(id: str, **changes) -> WorkflowInstance:
    """An instance with every column set, none to its default."""
    fields = {
        "id": id,
        "workflow": "rows",
        "version": 3,
        "status": Status.RUNNING,
        "input": {"text": "$wf not encoded", "list": [1, 2.5, None, True], "é": "ü"},
        "output": "a plain string",
        "error": {"name": "Boom", "message": "$wf1:looks:encoded"},
        "custom_status": 7,
        "wake_at": NOW - timedelta(seconds=5),
        "deadline": NOW + timedelta(days=1),
        "priority": 4,
        "queue": "rows-queue",
        "parent_id": "parent-1",
        "parent_close": "abandon",
        "schedule_id": "schedule-1",
        "scheduled_at": NOW - timedelta(minutes=1),
        "concurrency_key": "c-key",
        "rate_limit_key": "r-key",
        "runs": 2,
        "signal_cursor": 41,
        "lease_token": None,
        "lease_owner": "former owner",
        "lease_until": None,
        "cancel_requested": False,
        "terminate_requested": False,
        "cancel_reason": "a reason",
        "journal_warned": True,
        "created_at": NOW - timedelta(hours=1),
        "updated_at": NOW - timedelta(minutes=30),
        "awaited": True,
        "forked_from": "origin-1",
        "generation": 2,
        "subject_type": ContentType.objects.get_for_model(WorkflowInstance),
        "subject_id": "subject-1",
        "has_headers": True,
    }
    return WorkflowInstance(**{**fields, **changes})


def stored_row(id: str) -> tuple:
    """The row as the database holds it, every column but the id."""
    table = WorkflowInstance._meta.db_table
    columns = [f.column for f in WorkflowInstance._meta.concrete_fields if f.column != "id"]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(columns)} FROM {table} WHERE id = %s", [id])
        return cursor.fetchone()


def test_the_backends_insert_writes_the_row_the_orm_writes():
    assert insert_rows([every_field("by-orm")], connection.alias, OnConflict.IGNORE, []) == 1
    assert backend(connection.alias).insert_ignore_many([every_field("by-backend")]) == 1
    assert stored_row("by-backend") == stored_row("by-orm")


def test_the_backends_insert_sends_a_bool_in_an_integer_column_as_the_orm_does():
    # PostgreSQL reads a bool sent as it is as a boolean, which an integer column refuses.
    changes = {"priority": True, "custom_status": False}
    insert_rows([every_field("by-orm", **changes)], connection.alias, OnConflict.IGNORE, [])
    assert backend(connection.alias).insert_ignore(every_field("by-backend", **changes))
    assert stored_row("by-backend") == stored_row("by-orm")
    assert WorkflowInstance.objects.get(pk="by-backend").priority == 1


def test_the_backends_insert_ignores_the_ids_that_exist_and_counts_the_others():
    database = backend(connection.alias)
    assert database.insert_ignore(every_field("first"))
    assert not database.insert_ignore(every_field("first", output="another"))
    # more rows than SQLite takes parameters for in one statement: several statements
    batch = [every_field(f"batch-{n}") for n in range(70)]
    assert database.insert_ignore_many([every_field("first"), *batch]) == 70
    assert WorkflowInstance.objects.get(pk="first").output == "a plain string"
    assert WorkflowInstance.objects.filter(pk__startswith="batch-").count() == 70


def test_a_claimed_instance_is_the_instance_the_orm_loads():
    backend(connection.alias).insert_ignore(every_field("claimed"))
    claim = claims.claim(
        connection.alias,
        owner="owner",
        token="token-1",
        now=NOW,
        lease_until=NOW + timedelta(seconds=30),
        limit=5,
        workflows=[("rows", 3)],
    )
    [claimed] = claim.instances
    assert not claim.unreadable
    loaded = WorkflowInstance.objects.get(pk="claimed")
    for field in WorkflowInstance._meta.concrete_fields:
        assert getattr(claimed, field.attname) == getattr(loaded, field.attname), field.name
        assert type(getattr(claimed, field.attname)) is type(getattr(loaded, field.attname))
    assert claimed.lease_token == "token-1" and claimed.runs == 3
    assert claimed.input == {"text": "$wf not encoded", "list": [1, 2.5, None, True], "é": "ü"}
    assert claimed.wake_at == NOW - timedelta(seconds=5) and claimed.wake_at.tzinfo is not None
    assert claimed._state.db == connection.alias and not claimed._state.adding
