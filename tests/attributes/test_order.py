"""A page filtered by search attributes comes in the instance list's order (created_at, then
id), like an unfiltered page, whichever index the database reads it from: each attribute row
keeps its instance's created_at, from start(), ctx.set_attributes() and a fork alike."""

from __future__ import annotations

from datetime import timedelta

import pytest

import django_workflows as wf
from django_workflows.models import InstanceAttribute, WorkflowInstance

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def marked(define):
    @define("marked")
    def run(ctx, input):
        ctx.set_attributes(stage="ran")
        ctx.step("work", lambda step: "done")
        return "ok"

    return run


def ids(**filters) -> list[str]:
    return [s.id for s in wf.list_instances(workflow="marked", **filters)]


def test_a_filtered_page_comes_oldest_first_like_the_whole_list(marked, workflow_clock):
    # Ids sort the other way round from the times they were created at; two share a time.
    for id, amount in [("e", 5), ("d", 4), ("c", 3), ("b", 2), ("a", 1)]:
        wf.start("marked", id=id, attributes={"amount": amount, "tier": "pro"})
        if id != "c":
            workflow_clock.advance(timedelta(seconds=1))
    order = ["e", "d", "b", "c", "a"]  # c and b were created at the same time: by id
    assert ids() == order
    assert ids(attributes={"amount__gte": 0}) == order
    assert ids(attributes={"amount__gte": 0, "tier": "pro"}) == order
    assert ids(attributes={"tier": "pro", "amount__in": [1, 2, 5]}) == ["e", "b", "a"]
    assert ids(attributes={"amount__gte": 0}, limit=2, offset=1) == ["d", "b"]
    assert ids(attributes={"amount__gte": 0, "stage__isnull": True}) == order


def test_every_attribute_row_keeps_its_instances_created_at(marked, workflow_clock):
    wf.start("marked", id="first", attributes={"tier": "pro"})
    workflow_clock.advance(timedelta(minutes=5))
    wf.drain()  # ctx.set_attributes() writes "stage" five minutes after the start
    workflow_clock.advance(timedelta(minutes=5))
    assert wf.fork("first", from_step="work", new_id="again").created
    wf.drain()
    rows = InstanceAttribute.objects.order_by("instance_id", "name")
    created = dict(WorkflowInstance.objects.values_list("id", "created_at"))
    assert [(r.instance_id, r.name) for r in rows] == [
        ("again", "stage"),
        ("again", "tier"),
        ("first", "stage"),
        ("first", "tier"),
    ]
    assert all(r.created_at == created[r.instance_id] for r in rows)
    assert created["again"] == created["first"] + timedelta(minutes=10)
    assert ids(attributes={"stage": "ran"}) == ["first", "again"]
