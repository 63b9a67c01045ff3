"""The indexes the migrations leave out: the instance foreign keys of the journal, the tags and
the attributes have no index of their own (their unique constraint, which starts with the
instance, serves the lookups by instance), and on PostgreSQL no id or key has a pattern-operator
index (indexes.DropColumnIndexes in 0001_initial)."""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps
from django.db import connection, transaction

import django_workflows as wf
from django_workflows.models import InstanceAttribute, InstanceTag, JournalEntry

pytestmark = pytest.mark.django_db

UNIQUE = {
    JournalEntry: "dw_journal_unique_name",
    InstanceTag: "dw_tag_unique",
    InstanceAttribute: "dw_attribute_unique",
}


def constraints(table: str) -> dict[str, Any]:
    with connection.cursor() as cursor:
        return dict(connection.introspection.get_constraints(cursor, table))


def indexed_alone(table: str, column: str) -> list[str]:
    """The names of the indexes of `column` alone, the primary key's aside."""
    return [
        name
        for name, c in constraints(table).items()
        if c["index"] and not c["primary_key"] and c["columns"] == [column]
    ]


def unique_indexes(model: Any) -> set[str]:
    """The names the unique constraint's index goes by in a plan: its own, and on SQLite, which
    makes it part of the table, the automatic index's."""
    names = {UNIQUE[model]}
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA index_list({model._meta.db_table})")
            names |= {row[1] for row in cursor.fetchall() if row[3] == "u"}
    return names


def pattern_indexes() -> list[str]:
    """PostgreSQL: the app's indexes with a pattern operator class."""
    tables = [m._meta.db_table for m in apps.get_app_config("django_workflows").get_models()]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = ANY(%s) "
            "AND indexdef LIKE %s ORDER BY indexname",
            [tables, "%pattern_ops%"],
        )
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.parametrize("model", list(UNIQUE), ids=lambda m: m.__name__)
def test_the_instance_key_has_no_index_of_its_own(model: Any) -> None:
    table = model._meta.db_table

    assert indexed_alone(table, "instance_id") == []
    assert constraints(table)[UNIQUE[model]]["columns"][0] == "instance_id"


@pytest.mark.parametrize("model", list(UNIQUE), ids=lambda m: m.__name__)
def test_a_lookup_by_instance_reads_the_unique_index(define: Any, model: Any) -> None:
    @define("keyed")
    def keyed(ctx: Any, n: int) -> int:
        return n

    for n in range(50):
        wf.start(keyed, n, id=f"k-{n}", tags=["vip"], attributes={"region": "eu"})
    JournalEntry.objects.bulk_create(
        JournalEntry(instance_id=f"k-{n}", name="note", document={"n": n}) for n in range(50)
    )
    found = model.objects.filter(instance_id="k-7").order_by()
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL enable_seqscan = off")  # can it, not will it
        plan = found.explain()

    assert found.count() == 1
    assert any(name in plan for name in unique_indexes(model)), plan


def test_no_id_or_key_has_a_pattern_index() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("only PostgreSQL's schema editor makes pattern-operator indexes")

    assert pattern_indexes() == []
