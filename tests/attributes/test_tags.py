"""Tags and search attributes given at the start: start(tags=, attributes=), @workflow(tags=)
merged with them, InstanceStatus.tags/.attributes, list_instances(tag=), children's, and the
rows they are stored in, as docs/reference/api.md describes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

import django_workflows as wf
from django_workflows.models import InstanceAttribute, InstanceTag

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def tagged(define):
    @define("tagged-order", tags=["shop", "orders"])
    def run(ctx, input):
        ctx.wait_for_signal("go", "go", key=ctx.instance_id)
        return "ok"

    return run


def test_the_start_tags_merge_with_the_static_ones_sorted_and_once(tagged):
    wf.start("tagged-order", id="o1", tags=["express", "shop"])
    assert wf.get_status("o1").tags == ["express", "orders", "shop"]
    assert sorted(InstanceTag.objects.filter(instance_id="o1").values_list("tag", flat=True)) == [
        "express",
        "orders",
        "shop",
    ]


def test_static_tags_alone_are_written_and_an_untagged_workflow_has_none(tagged, define):
    @define("untagged")
    def run(ctx, input):
        return 1

    wf.start("tagged-order", id="o2")
    wf.start("untagged", id="u1")
    assert wf.get_status("o2").tags == ["orders", "shop"]
    assert wf.get_status("u1").tags == []
    assert wf.get_status("u1").attributes == {}
    assert not InstanceTag.objects.filter(instance_id="u1").exists()


def test_attributes_come_back_in_their_python_types(tagged):
    placed = datetime(2026, 12, 1, 15, 30, 1, 123456, tzinfo=timezone(timedelta(hours=2)))
    values = {"tier": "pro", "amount": 1250, "ratio": 0.25, "vip": True, "placed": placed}
    wf.start("tagged-order", id="o3", attributes=values)
    found = wf.get_status("o3").attributes
    assert found == values
    assert type(found["amount"]) is int and type(found["ratio"]) is float
    assert found["vip"] is True
    assert found["placed"].utcoffset() == timedelta(0)  # aware, in UTC
    assert found["placed"] == placed.astimezone(UTC)
    kinds = dict(InstanceAttribute.objects.filter(instance_id="o3").values_list("name", "kind"))
    assert kinds == {
        "tier": "str",
        "amount": "int",
        "ratio": "float",
        "vip": "bool",
        "placed": "datetime",
    }


def test_list_instances_fills_tags_and_attributes_with_one_query_a_table(tagged):
    for n in range(5):
        wf.start("tagged-order", id=f"l{n}", tags=[f"t{n}"], attributes={"n": n})
    with CaptureQueriesContext(connection) as queries:
        listed = wf.list_instances(workflow="tagged-order")
    assert [s.attributes for s in listed] == [{"n": n} for n in range(5)]
    assert [s.tags for s in listed] == [sorted(["orders", "shop", f"t{n}"]) for n in range(5)]
    # the page, which tables hold rows of its instances, then one read of each such table for
    # the whole page
    reads = [q["sql"].replace('"', "").replace("`", "") for q in queries.captured_queries]
    assert sum(sql.startswith("SELECT django_workflows_instancetag.") for sql in reads) == 1
    assert sum(sql.startswith("SELECT django_workflows_instanceattribute.") for sql in reads) == 1
    assert len(reads) == 4


def test_list_instances_by_tag(tagged):
    wf.start("tagged-order", id="a", tags=["express"])
    wf.start("tagged-order", id="b")
    wf.start("tagged-order", id="c", tags=["express", "gift"])
    assert [s.id for s in wf.list_instances(tag="express")] == ["a", "c"]
    assert [s.id for s in wf.list_instances(tag="orders")] == ["a", "b", "c"]
    assert [s.id for s in wf.list_instances(tag="gift", attributes={"x__isnull": True})] == ["c"]
    assert wf.list_instances(tag="nobody") == []


def test_a_start_that_finds_the_instance_keeps_its_tags_and_attributes(tagged):
    wf.start("tagged-order", id="same", tags=["first"], attributes={"n": 1})
    again = wf.start("tagged-order", id="same", tags=["second"], attributes={"n": 2})
    assert again.created is False
    status = wf.get_status("same")
    assert status.tags == ["first", "orders", "shop"]
    assert status.attributes == {"n": 1}


def test_tags_roll_back_with_the_callers_transaction(tagged):
    with pytest.raises(RuntimeError), transaction.atomic():
        wf.start("tagged-order", id="rolled", tags=["x"], attributes={"n": 1})
        raise RuntimeError("the business rows fail")
    assert wf.get_status("rolled") is None
    assert not InstanceTag.objects.filter(instance_id="rolled").exists()
    assert not InstanceAttribute.objects.filter(instance_id="rolled").exists()


def test_a_start_without_tags_or_attributes_adds_no_query(define):
    @define("plain")
    def run(ctx, input):
        return 1

    wf.start("plain", id="warm")  # the first start reads the server's settings once
    with CaptureQueriesContext(connection) as plain:
        wf.start("plain", id="p1")
    assert not any("instancetag" in q["sql"] or "instanceattribute" in q["sql"] for q in plain)


def test_a_child_gets_its_own_tags_and_attributes(define):
    @define("tagged-child", tags=["child"])
    def child(ctx, input):
        return input

    @define("tagging-parent")
    def parent(ctx, input):
        return ctx.execute_child(
            "tagged-child", 3, id="kid", tags=["from-parent"], attributes={"depth": 1}
        )

    wf.start("tagging-parent", id="parent")
    for _ in range(4):
        wf.drain()
    assert wf.get_status("parent").status == "completed", wf.get_status("parent").error
    kid = wf.get_status("kid")
    assert kid.tags == ["child", "from-parent"]
    assert kid.attributes == {"depth": 1}
    assert wf.get_status("parent", children=True).children[0].tags == ["child", "from-parent"]


def test_cancel_returns_the_instance_with_its_tags(tagged):
    wf.start("tagged-order", id="cx", tags=["x"], attributes={"n": 1})
    result = wf.cancel("cx")
    assert result.instance.tags == ["orders", "shop", "x"]
    assert result.instance.attributes == {"n": 1}


def test_the_static_tags_are_on_the_definition(tagged):
    assert tagged.tags == ("orders", "shop")
