"""The indexes of the parent, the schedule and the subject: where the database has partial
indexes they hold only the instances that have one (most have none, and then cost those indexes
nothing at each write of their row); a lookup by value still reads them; and the subject's
content type has no index of its own beside `dw_instance_subject`."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection, transaction

import django_workflows as wf
from django_workflows.models import WorkflowInstance
from tests.testapp.models import Order

pytestmark = pytest.mark.django_db

SPARSE = ("dw_instance_parent", "dw_instance_schedule", "dw_instance_subject")


@pytest.fixture
def instances(define: Any) -> None:
    """400 instances; two of them with a parent, a schedule and a subject."""

    @define("sparse")
    def sparse(ctx: Any, n: int) -> int:
        return n

    with transaction.atomic():
        for n in range(400):
            wf.start(sparse, n, id=f"i-{n}")
    WorkflowInstance.objects.filter(id__in=["i-1", "i-2"]).update(
        parent_id="i-0",
        schedule_id="nightly",
        subject_type=ContentType.objects.get_for_model(Order),
        subject_id="3f9a1c",
    )


@pytest.mark.parametrize(
    "lookup, index",
    [
        ({"parent_id": "i-0"}, "dw_instance_parent"),
        ({"schedule_id__in": ["nightly", "hourly"]}, "dw_instance_schedule"),
        ({"subject_id": "3f9a1c", "subject_type__model": "order"}, "dw_instance_subject"),
    ],
)
def test_a_lookup_by_value_reads_the_index(instances: None, lookup: Any, index: str) -> None:
    found = WorkflowInstance.objects.filter(**lookup).order_by()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Whether the index can serve the lookup, not whether 400 rows are worth it: the
            # planner may prefer reading the table, or another index in the model's order.
            cursor.execute("SET LOCAL enable_seqscan = off")

    assert sorted(found.values_list("id", flat=True)) == ["i-1", "i-2"]
    assert index in found.explain()


@pytest.mark.django_db(transaction=True)  # SQLite's schema editor works outside atomic() only
def test_where_there_are_partial_indexes_they_leave_out_the_instances_without_one() -> None:
    indexes = [i for i in WorkflowInstance._meta.indexes if i.name in SPARSE]
    with connection.schema_editor(collect_sql=True) as editor:
        for index in indexes:
            sql = str(index.create_sql(WorkflowInstance, editor))
            column = WorkflowInstance._meta.get_field(index.fields[0]).column
            partial = f"WHERE {editor.quote_name(column)} IS NOT NULL"

            assert (partial in sql) == connection.features.supports_partial_indexes, sql
    assert sorted(i.name for i in indexes) == sorted(SPARSE)


def test_the_subjects_content_type_has_no_index_of_its_own() -> None:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(
            cursor, WorkflowInstance._meta.db_table
        )
    indexed = [c["columns"] for c in constraints.values() if c["index"] and not c["primary_key"]]

    assert ["subject_type_id"] not in indexed
    assert ["subject_type_id", "subject_id"] in indexed
