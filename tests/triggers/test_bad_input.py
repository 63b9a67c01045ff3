"""Bad declarations fail at decoration; bad ids and keys at send time, before anything is
written, naming the declaration: send() raises (rolling the caller's atomic() back, or leaving
it usable when caught), and send_robust() returns the error."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.db.models.signals import post_save
from django.dispatch import Signal

from django_workflows import list_instances, signal_on, start_on
from django_workflows.models import Signal as StoredSignal
from django_workflows.models import WorkflowInstance
from tests.testapp.models import Ledger, Purchase

pytestmark = pytest.mark.django_db(transaction=True)

placed = Signal()


def test_start_on_without_an_id_is_a_type_error():
    with pytest.raises(TypeError, match="id"):
        start_on(placed, input=None)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="start_on.* needs an id"):
        start_on(placed, id=None, input=None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"signal": "post_save"}, TypeError, "takes a django.dispatch.Signal"),
        ({"signal": post_save, "sender": "Purchase"}, ValueError, "app_label.ModelName"),
        ({"signal": post_save, "sender": object()}, TypeError, "sender must be a model class"),
        (
            {"signal": post_save, "sender": "testapp.Nothing"},
            ValueError,
            "names no installed model",
        ),
        ({"id": 7}, TypeError, "id must be a string or a function"),
        ({"id": ""}, ValueError, "id must not be empty"),
        ({"input": {1, 2}}, TypeError, "the input must be a JSON value"),
        ({"when": "yes"}, TypeError, "when must be a bool or a function"),
        ({"priority": 0}, ValueError, "priority must be an integer from 1"),
        ({"concurrency_key": 5}, TypeError, "concurrency_key must be a string"),
        ({"tags": "express"}, TypeError, "tags must be a list of strings"),
        ({"attributes": {1: "x"}}, TypeError, "attributes must be a dict"),
        ({"subject": "order"}, TypeError, "subject must be a model instance"),
    ],
)
def test_bad_start_on_arguments_fail_at_decoration(define, arguments, error, message):
    given = {"signal": placed, "id": "x", "input": None, **arguments}
    with pytest.raises(error, match=message):

        @start_on(given.pop("signal"), **given)
        @define("trigger-bad")
        def flow(ctx, input):
            return None


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"django_signal": None}, TypeError, "takes a django.dispatch.Signal"),
        ({"signal": 3}, TypeError, "signal must be a WorkflowSignal"),
        ({"signal": "$update:x"}, ValueError, "engine's own"),
        ({"key": 3}, TypeError, "key must be a string"),
        ({"payload": float("nan")}, TypeError, "the payload must be a JSON value"),
    ],
)
def test_bad_signal_on_arguments_fail_at_decoration(arguments, error, message):
    given = {"django_signal": placed, "signal": "s", "payload": None, **arguments}
    with pytest.raises(error, match=message):
        signal_on(given.pop("django_signal"), **given)


def test_something_else_than_a_workflow_or_function_is_refused():
    with pytest.raises(TypeError, match="decorates a @workflow"):
        start_on(placed, id="x", input=None)(42)


@pytest.fixture
def mapped(define):
    @start_on(post_save, sender=Purchase, id=lambda instance, **kw: instance.reference, input=None)
    @define("trigger-ids")
    def flow(ctx, input):
        return None

    return flow


def test_an_over_long_derived_id_raises_from_send_and_rolls_the_save_back(mapped):
    with pytest.raises(
        ValueError,
        match=r"start_on\(post_save, sender=testapp.Purchase\) of workflow 'trigger-ids' version 1: the id is 300 characters long",
    ):
        with transaction.atomic():
            Ledger.objects.create(order_id="l1", total=1)
            Purchase.objects.create(reference="x" * 300)

    assert not Purchase.objects.exists() and not Ledger.objects.exists()
    assert not WorkflowInstance.objects.exists()


def test_a_derived_id_in_the_form_of_a_schedule_occurrences_raises_naming_the_declaration(
    mapped,
):
    with pytest.raises(ValueError) as raised:
        with transaction.atomic():
            Ledger.objects.create(order_id="l1", total=1)
            Purchase.objects.create(reference="nightly@2026-01-01T00:00:00.000Z")

    message = str(raised.value)
    assert message.startswith(
        "start_on(post_save, sender=testapp.Purchase) of workflow 'trigger-ids' version 1: the "
        "id 'nightly@2026-01-01T00:00:00.000Z' has the form of a schedule occurrence's"
    )
    assert "make the declaration's id give another form" in message
    assert not Purchase.objects.exists() and not Ledger.objects.exists()
    assert not WorkflowInstance.objects.exists()


def test_a_caught_failure_leaves_the_callers_transaction_usable(mapped):
    with transaction.atomic():
        with pytest.raises(ValueError, match="the id is 300 characters long"):
            Purchase.objects.create(reference="x" * 300)
        Ledger.objects.create(order_id="l2", total=2)  # the transaction goes on

    assert Ledger.objects.get().order_id == "l2"
    assert not WorkflowInstance.objects.exists()


def test_a_derived_id_that_is_not_a_string_raises_naming_the_declaration(define):
    @start_on(placed, id=lambda n, **kw: n, input=None)
    @define("trigger-int-id")
    def flow(ctx, input):
        return None

    with pytest.raises(
        TypeError, match="'trigger-int-id' version 1: the id function must return a string, not int"
    ):
        placed.send(sender=None, n=7)


def test_a_function_that_needs_an_argument_the_signal_does_not_send(define):
    @start_on(placed, id=lambda order: order, input=None)
    @define("trigger-missing")
    def flow(ctx, input):
        return None

    with pytest.raises(
        TypeError, match="the id function cannot be called with the signal's keyword arguments"
    ):
        placed.send(sender=None, n=7)


def test_send_robust_returns_the_error_and_writes_nothing(define):
    @start_on(placed, id=lambda n, **kw: f"ok-{n}", input=None)
    @define("trigger-fine")
    def fine(ctx, input):
        return None

    @signal_on(placed, signal="trigger-s", key=lambda n, **kw: "k" * (300 + n), payload=None)
    @define("trigger-bad-key")
    def bad(ctx, input):
        return None

    with transaction.atomic():
        [(_, error)] = placed.send_robust(sender=None, n=1)
        Ledger.objects.create(order_id="l3", total=3)

    assert isinstance(error, ValueError)
    assert "signal_on(tests.triggers.test_bad_input.placed" in str(
        error
    ) and "the key is 301 characters long" in str(error)
    # Checked before anything was written: not even the other workflow's start.
    assert not WorkflowInstance.objects.exists() and not StoredSignal.objects.exists()
    assert Ledger.objects.filter(order_id="l3").exists()


def test_send_robust_returns_a_failure_of_start_and_leaves_the_transaction_usable(define):
    from django_workflows import WorkflowIdConflictError, start

    @start_on(placed, id="one-instance", input=lambda n, **kw: {"n": n})
    @define("trigger-conflicts")
    def flow(ctx, input):
        return None

    start(flow, {"n": 0}, id="one-instance")
    with transaction.atomic():
        [(_, error)] = placed.send_robust(sender=None, n=1)
        Ledger.objects.create(order_id="l4", total=4)

    assert isinstance(error, WorkflowIdConflictError)
    assert Ledger.objects.filter(order_id="l4").exists()
    assert [s.input for s in list_instances()] == [{"n": 0}]  # decoded, also with a codec


def test_an_input_function_that_returns_no_json_raises_naming_the_declaration(define):
    @start_on(placed, id="x", input=lambda n, **kw: {n})
    @define("trigger-no-json")
    def flow(ctx, input):
        return None

    with pytest.raises(
        TypeError, match="'trigger-no-json' version 1: the input must be a JSON value"
    ):
        placed.send(sender=None, n=7)
    assert not WorkflowInstance.objects.exists()
