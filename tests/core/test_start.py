"""Starting instances: results, idempotency by id, and the caller's transaction."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction

import django_workflows as wf
from django_workflows.models import WorkflowInstance
from tests.core.helpers import order
from tests.helpers import claim_ids
from tests.testapp.models import Ledger
from tests.testapp.workflows import fulfil_order, fulfilment_id

pytestmark = pytest.mark.django_db


def test_start_returns_a_pending_instance(workflow_clock):
    started = wf.start(fulfil_order, order(), id=fulfilment_id("71e1973d"))
    assert started == wf.StartResult("order-71e1973d", "order-fulfilment", 1, True, "pending")
    status = wf.get_status("order-71e1973d")
    assert status.status == "pending"
    assert status.input == order()
    assert status.created_at == workflow_clock.now()


def test_start_with_a_name_is_the_same_as_with_the_definition(workflow_clock):
    wf.start("order-fulfilment", order(), id="order-a")
    again = wf.start(fulfil_order, order(), id="order-a")
    assert again.created is False


def test_start_without_an_id_gives_a_random_one(workflow_clock):
    first = wf.start("values", None)
    second = wf.start("values", None)
    assert first.id != second.id and first.created and second.created


def test_starting_the_same_id_with_the_same_input_returns_the_existing_instance(
    world, workflow_clock
):
    wf.start("order-fulfilment", order(), id="order-1")
    wf.drain()
    again = wf.start("order-fulfilment", order(), id="order-1")
    assert again.created is False
    assert again.status == "suspended"
    assert WorkflowInstance.objects.filter(pk="order-1").count() == 1
    assert len(world.charges) == 1  # a reconciliation job does not charge twice


def test_starting_the_same_id_with_another_input_raises_an_id_conflict(workflow_clock):
    wf.start("order-fulfilment", order(), id="order-1")
    with pytest.raises(wf.WorkflowIdConflictError) as raised:
        wf.start("order-fulfilment", order(user_id="u_other"), id="order-1")
    assert raised.value.status_code == 409
    assert wf.get_status("order-1").input == order()


def test_starting_the_same_id_with_another_workflow_raises_an_id_conflict(workflow_clock):
    wf.start("values", {"a": 1}, id="shared-id")
    with pytest.raises(wf.WorkflowIdConflictError):
        wf.start("swallow", {"a": 1}, id="shared-id")


def test_the_input_comes_back_in_its_json_form(workflow_clock):
    wf.start("values", {"pair": (1, 2)}, id="json-form")
    assert wf.get_status("json-form").input == {"pair": [1, 2]}


def test_the_run_timeout_of_the_decorator_sets_the_deadline(workflow_clock):
    wf.start("order-fulfilment", order(), id="order-deadline")
    assert wf.get_status("order-deadline").deadline == workflow_clock.now() + timedelta(days=30)


def test_get_status_of_an_unknown_id_is_none():
    assert wf.get_status("nobody") is None


def test_placing_an_order_commits_the_order_row_and_the_instance_together(workflow_clock):
    with transaction.atomic():
        Ledger.objects.create(order_id="71e1973d", total=2499)
        wf.start("order-fulfilment", order(), id=fulfilment_id("71e1973d"))
    assert Ledger.objects.filter(order_id="71e1973d").exists()
    assert wf.get_status("order-71e1973d").status == "pending"


def test_a_failure_after_start_rolls_back_the_order_row_and_the_instance(world, workflow_clock):
    with pytest.raises(RuntimeError), transaction.atomic():
        Ledger.objects.create(order_id="71e1973d", total=2499)
        wf.start("order-fulfilment", order(), id=fulfilment_id("71e1973d"))
        assert wf.get_status("order-71e1973d") is not None  # visible inside the transaction
        raise RuntimeError("the shop failed after start()")
    assert not Ledger.objects.filter(order_id="71e1973d").exists()
    assert wf.get_status("order-71e1973d") is None
    assert wf.drain() == 0
    assert world.calls == []


def test_list_instances_filters_by_workflow_and_status(world, workflow_clock):
    wf.start("order-fulfilment", order(), id="order-1")
    wf.start("values", None, id="values-1")
    wf.drain()
    suspended = wf.list_instances(workflow="order-fulfilment", status=["suspended"])
    assert [i.id for i in suspended] == ["order-1"]
    assert {i.id for i in wf.list_instances()} == {"order-1", "values-1"}
    assert wf.list_instances(status="completed") == []


def test_claims_take_instances_without_a_priority_first_then_lowest_first(define, workflow_clock):
    @define("prioritised")
    def prioritised(ctx, input):
        return None

    wf.start("prioritised", None, id="p5", priority=5)
    workflow_clock.advance("1s")
    wf.start("prioritised", None, id="p1", priority=1)
    workflow_clock.advance("1s")
    wf.start("prioritised", None, id="none")  # started last, claimed first
    assert claim_ids(["prioritised"], limit=3) == ["none", "p1", "p5"]
