"""signal_on: a Django signal sends a workflow signal, once per delivery id, to every version."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.dispatch import Signal

import django_workflows as wf
from django_workflows import WorkflowDefinitionError, WorkflowSignal, signal_on, start_on
from django_workflows.models import Signal as StoredSignal

pytestmark = pytest.mark.django_db(transaction=True)

delivered = WorkflowSignal("trigger-delivered")
carrier_reported = Signal()  # sent with reference=, tracking=


def delivery_payload(reference, tracking, **kwargs):
    return {"reference": reference, "tracking": tracking}


def delivery_key(reference, **kwargs):
    return reference


def delivery_id(tracking, **kwargs):
    return tracking


@pytest.fixture
def waiting(define):
    """A workflow that waits for the delivery of its order; its delivery is mapped from
    `carrier_reported`."""

    @signal_on(
        carrier_reported,
        signal=delivered,
        key=delivery_key,
        id=delivery_id,
        payload=delivery_payload,
    )
    @define("trigger-waits")
    def flow(ctx, input):
        return ctx.wait_for_signal("delivery", delivered, key=input["reference"])

    return flow


def test_a_custom_signal_wakes_the_waiting_instance(waiting):
    wf.start(waiting, {"reference": "o1"}, id="o1")
    wf.drain()
    assert wf.get_status("o1").status == "suspended"

    with transaction.atomic():
        [(_, [sent])] = carrier_reported.send(sender=None, reference="o1", tracking="T1")
    assert (sent.created, sent.woken, sent.key) == (True, 1, "o1")
    wf.drain()
    assert wf.result("o1") == {"reference": "o1", "tracking": "T1"}


def test_a_re_sent_delivery_with_the_same_id_stores_nothing_new(waiting):
    carrier_reported.send(sender=None, reference="o1", tracking="T1")
    [(_, [again])] = carrier_reported.send(sender=None, reference="o1", tracking="T1")

    assert again.created is False
    assert StoredSignal.objects.filter(name="trigger-delivered").count() == 1


def test_a_signal_sent_before_the_wait_is_kept_and_taken(waiting):
    wf.start(waiting, {"reference": "o2"}, id="o2")  # pending: not waiting yet
    carrier_reported.send(sender=None, reference="o2", tracking="T2")
    wf.drain()

    assert wf.result("o2") == {"reference": "o2", "tracking": "T2"}


def test_a_rolled_back_send_stores_no_signal(waiting):
    with pytest.raises(RuntimeError), transaction.atomic():
        carrier_reported.send(sender=None, reference="o1", tracking="T1")
        raise RuntimeError("the business transaction fails")

    assert not StoredSignal.objects.filter(name="trigger-delivered").exists()


def test_versions_that_agree_send_the_signal_once(define):
    @signal_on(carrier_reported, signal=delivered, key=delivery_key, payload=delivery_payload)
    @define("trigger-agree", version=1)
    def one(ctx, input):
        return None

    @signal_on(carrier_reported, signal=delivered, key=delivery_key, payload=delivery_payload)
    @define("trigger-agree", version=2)
    def two(ctx, input):
        return None

    [(_, results)] = carrier_reported.send(sender=None, reference="o3", tracking="T3")
    assert len(results) == 1
    assert StoredSignal.objects.filter(name="trigger-delivered").count() == 1


def test_versions_with_conflicting_signal_on_raise_and_store_nothing(define):
    @signal_on(carrier_reported, signal=delivered, key=delivery_key, payload=delivery_payload)
    @define("trigger-conflict", version=1)
    def one(ctx, input):
        return None

    @signal_on(
        carrier_reported,
        signal=delivered,
        key=delivery_key,
        id=delivery_id,
        payload=lambda tracking, **kw: tracking,
    )
    @define("trigger-conflict", version=2)
    def two(ctx, input):
        return None

    with pytest.raises(WorkflowDefinitionError, match="version 1 and .* version 2 send signal"):
        carrier_reported.send(sender=None, reference="o4", tracking="T4")
    assert not StoredSignal.objects.exists()


def test_one_send_starts_one_workflow_and_signals_another(define, waiting):
    opened = Signal()

    @start_on(
        opened,
        id=lambda reference, **kw: reference,
        input=lambda reference, **kw: {"reference": reference},
    )
    @define("trigger-opens")
    def opens(ctx, input):
        return None

    @signal_on(opened, signal="trigger-opened", key=lambda reference, **kw: reference, payload=None)
    @define("trigger-hears")
    def hears(ctx, input):
        return None

    [(_, results)] = opened.send(sender=None, reference="r1")
    assert [type(result).__name__ for result in results] == ["StartResult", "SignalResult"]


def test_when_false_sends_nothing(define):
    @signal_on(
        carrier_reported,
        signal=delivered,
        key=delivery_key,
        payload=delivery_payload,
        when=lambda tracking, **kw: tracking.startswith("T"),
    )
    @define("trigger-when")
    def flow(ctx, input):
        return None

    carrier_reported.send(sender=None, reference="o5", tracking="X5")
    assert not StoredSignal.objects.exists()
    carrier_reported.send(sender=None, reference="o5", tracking="T5")
    assert StoredSignal.objects.count() == 1


def test_a_step_that_sends_gets_the_step_derived_signal_id(define):
    reported = Signal()

    @signal_on(reported, signal="trigger-from-step", key="k", payload=lambda n, **kw: n)
    @define("trigger-listener")
    def listener(ctx, input):
        return None

    attempts = []

    def send(step):
        attempts.append(step.attempt)
        reported.send(sender=None, n=len(attempts))
        if len(attempts) == 1:
            raise RuntimeError("the first attempt fails after sending")
        return "sent"

    @define("trigger-sender")
    def sender(ctx, input):
        return ctx.step("send", send, retry=wf.Retry(attempts=2, delay="0s"))

    wf.start(sender, None, id="s1")
    wf.drain()
    assert wf.result("s1") == "sent"
    stored = StoredSignal.objects.filter(name="trigger-from-step")
    assert len(attempts) == 2 and stored.count() == 1
    assert stored.get().dedupe_id is not None
