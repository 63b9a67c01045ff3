"""Bad input: a clear error naming the problem, raised before anything is written."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

import django_workflows as wf
from django_workflows import Retry
from django_workflows.models import Signal, WorkflowInstance
from django_workflows.store import payloads
from tests.core.helpers import order

pytestmark = pytest.mark.django_db


def nothing_written():
    return not WorkflowInstance.objects.exists() and not Signal.objects.exists()


def test_an_input_that_is_not_json_raises_a_type_error(workflow_clock):
    with pytest.raises(TypeError, match="input"):
        wf.start("values", {"when": object()}, id="bad")
    assert nothing_written()


def test_a_nan_input_is_not_json(workflow_clock):
    with pytest.raises(TypeError):
        wf.start("values", {"x": float("nan")}, id="bad")
    assert nothing_written()


def test_a_signal_payload_that_is_not_json_raises_a_type_error(workflow_clock):
    with pytest.raises(TypeError, match="payload"):
        wf.signal("ping", {1, 2}, key="A")
    assert nothing_written()


def test_an_unknown_workflow_raises_not_found(workflow_clock):
    with pytest.raises(wf.WorkflowNotFoundError, match="no-such-workflow"):
        wf.start("no-such-workflow", None, id="bad")
    assert nothing_written()


@pytest.mark.parametrize("duration", ["soon", "-5m", "3 parsecs", ""])
def test_a_bad_run_timeout_raises_a_value_error(workflow_clock, duration):
    with pytest.raises(ValueError, match="timeout"):
        wf.start("values", None, id="bad", timeout=duration)
    assert nothing_written()


def test_a_bad_retry_delay_raises_a_value_error():
    with pytest.raises(ValueError, match="delay"):
        Retry(delay="soon")


def test_another_input_for_an_existing_id_raises_an_id_conflict(workflow_clock):
    wf.start("order-fulfilment", order(), id="order-1")
    with pytest.raises(wf.WorkflowIdConflictError):
        wf.start("order-fulfilment", order(id="other"), id="order-1")
    assert wf.get_status("order-1").input == order()
    assert WorkflowInstance.objects.count() == 1


@pytest.mark.parametrize("priority", [0, -1, 2_097_152, 1.5, True])
def test_a_priority_out_of_range_raises_a_value_error(workflow_clock, priority):
    with pytest.raises(ValueError, match="priority"):
        wf.start("values", None, id="bad", priority=priority)
    assert nothing_written()


@pytest.mark.parametrize("priority", [1, 2_097_151])
def test_the_priorities_at_the_ends_of_the_range_are_accepted(workflow_clock, priority):
    assert wf.start("values", None, id=f"p{priority}", priority=priority).created


def test_an_id_longer_than_its_column(workflow_clock):
    """Refused before any SQL on every database, with the caller's transaction still usable."""
    with transaction.atomic():
        with pytest.raises(ValueError, match="instance id"):
            wf.start("values", None, id="o" * 256)
        assert WorkflowInstance.objects.count() == 0  # the transaction is still usable
    assert nothing_written()


def test_a_signal_key_longer_than_its_column(workflow_clock):
    with transaction.atomic():
        with pytest.raises(ValueError, match="signal key"):
            wf.signal("ping", None, key="k" * 256)
        assert WorkflowInstance.objects.count() == 0
    assert nothing_written()


def test_a_nul_character_in_an_input_string(workflow_clock):
    if connection.vendor == "postgresql":
        with pytest.raises(ValueError, match="NUL"):
            wf.start("values", {"note": "a\x00b"}, id="nul")
        assert nothing_written()
    else:
        # SQLite and MySQL store it as it is.
        wf.start("values", {"note": "a\x00b"}, id="nul")
        assert wf.get_status("nul").input == {"note": "a\x00b"}


def test_a_nul_character_in_a_signal_payload(workflow_clock):
    if connection.vendor == "postgresql":
        with pytest.raises(ValueError, match="NUL"):
            wf.signal("ping", {"note": "a\x00b"})
        assert nothing_written()
    else:
        sent = wf.signal("ping", {"note": "a\x00b"})
        stored = payloads.decode_signal(Signal.objects.get(pk=sent.signal_id))
        assert stored.payload == {"note": "a\x00b"}


@pytest.mark.django_db(transaction=True)
def test_a_signal_inside_a_serializable_transaction(workflow_clock):
    if connection.vendor == "postgresql":
        with pytest.raises(TypeError, match="SERIALIZABLE"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
            wf.signal("ping", {"n": 1})
        assert not Signal.objects.exists()
        with transaction.atomic():  # READ COMMITTED, the default, is fine
            assert wf.signal("ping", {"n": 1}).created
    else:
        # SQLite serializes writers itself; on MySQL the default REPEATABLE READ works as well.
        with transaction.atomic():
            assert wf.signal("ping", {"n": 1}).created
    assert Signal.objects.count() == 1


def test_a_step_result_that_is_not_json_fails_the_step_with_a_type_error(world, workflow_clock):
    from django_workflows import workflow
    from django_workflows.engine.registry import registry

    @workflow("returns-a-set")
    def returns_a_set(ctx, input):
        return ctx.step("set", lambda step: {1, 2})

    try:
        wf.start("returns-a-set", None, id="set")
        wf.drain()
    finally:
        registry.unregister(returns_a_set)
    status = wf.get_status("set", journal=True)
    assert status.status == "failed"
    assert status.error["cause"]["name"] == "TypeError"
    assert status.error["attempts"] == 1  # not retried: retrying cannot help


@pytest.mark.parametrize(
    ("length", "compensated", "message"),
    [(513, False, "513 characters long; the most it can be is 512"), (501, True, "at most 500")],
)
def test_a_journal_name_too_long_fails_the_instance_before_the_step_runs(
    define, workflow_clock, length, compensated, message
):
    # A compensation is journaled as "$compensate:<step>": its step name has 12 fewer characters.
    ran = []

    @define("long-names")
    def long_names(ctx, input):
        undo = (lambda result, step: None) if compensated else None
        ctx.step("s" * length, lambda step: ran.append(1), compensate=undo)

    wf.start("long-names", {}, id="long")
    wf.drain()
    status = wf.get_status("long")
    assert status.status == "failed" and status.error["name"] == "ValueError"
    assert message in status.error["message"]
    assert ran == []
