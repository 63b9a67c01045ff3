"""start() and signal() called from inside a step (the reference's "Execute commands from
steps"): a step runs at least once, so what it starts or sends without an id of its own gets
one derived from the step, and a retried step starts and sends nothing twice."""

from __future__ import annotations

import pytest

import django_workflows as wf
from django_workflows import Retry
from django_workflows.models import Signal, WorkflowInstance

pytestmark = pytest.mark.django_db


@pytest.fixture
def notify(define):
    """A workflow whose step starts two invoices and sends two signals, then fails once."""
    seen = {"attempts": 0, "started": [], "signals": []}

    @define("invoice")
    def invoice(ctx, input):
        return input

    @define("notifier")
    def notifier(ctx, order):
        def publish(step):
            seen["attempts"] += 1
            for n in range(2):
                # The input changes between attempts: a repeat returns the first one's instance.
                started = wf.start("invoice", {"n": n, "attempt": step.attempt})
                seen["started"].append((started.id, started.created))
            for key in ("a", "a", "b"):
                sent = wf.signal("order.paid", {"attempt": step.attempt}, key=key)
                seen["signals"].append((sent.signal_id, sent.created))
            if step.attempt == 1:
                raise ConnectionError("the broker went away")
            return "published"

        return ctx.step("publish", publish, retry=Retry(attempts=2, delay="1s"))

    return seen


def test_a_retried_step_starts_and_signals_nothing_twice(notify, workflow_clock):
    wf.start("notifier", {}, id="order-1")
    wf.drain()
    workflow_clock.advance("1s")
    wf.drain()
    assert wf.get_status("order-1").status == "completed", wf.get_status("order-1").error
    assert notify["attempts"] == 2
    first, second = notify["started"][:2], notify["started"][2:]
    assert [created for _, created in first] == [True, True]
    assert [created for _, created in second] == [False, False]
    assert [id for id, _ in first] == [id for id, _ in second]
    assert first[0][0] != first[1][0]  # each start of the step has a place of its own
    invoices = WorkflowInstance.objects.filter(workflow="invoice").order_by("id")
    inputs = [wf.get_status(i.id).input for i in invoices]
    assert inputs == [{"n": 0, "attempt": 1}, {"n": 1, "attempt": 1}]
    assert all(i.id.startswith("order-1:publish/invoice#") for i in invoices)
    sent, again = notify["signals"][:3], notify["signals"][3:]
    assert [created for _, created in sent] == [True, True, True]
    assert [created for _, created in again] == [False, False, False]
    assert Signal.objects.filter(name="order.paid").count() == 3


def test_outside_a_step_start_and_signal_keep_their_random_ids_and_no_dedupe(define):
    @define("plain")
    def plain(ctx, input):
        return None

    assert wf.start("plain", {}).id != wf.start("plain", {}).id
    assert wf.signal("ping").created and wf.signal("ping").created


def test_an_id_given_in_a_step_is_used_as_given(define, workflow_clock):
    @define("given-child")
    def child(ctx, input):
        return None

    @define("gives-ids")
    def gives(ctx, input):
        return ctx.step("start", lambda step: wf.start("given-child", {}, id="mine").id)

    wf.start("gives-ids", {}, id="g")
    wf.drain()
    assert wf.get_status("g").output == "mine"


@pytest.mark.django_db(transaction=True)  # the step with a timeout writes from its own thread
def test_a_step_with_a_timeout_and_a_compensation_derive_their_own_ids(define, workflow_clock):
    # A step with a timeout runs in a thread of its own; a compensation is a step of its own.
    results = []

    @define("audit")
    def audit(ctx, input):
        return input

    @define("audited/order")  # a "/" in the name: the id is a digest, not ambiguous text
    def audited(ctx, input):
        def act(step):
            results.append(("act", step.attempt, wf.start("audit", "did").created))
            if step.attempt == 1:
                raise ConnectionError("once")

        def undo(result, step):
            results.append(("undo", step.attempt, wf.start("audit", "undid").created))

        ctx.step("act", act, timeout="10s", retry=Retry(attempts=2, delay="1s"), compensate=undo)
        ctx.fail("Undo it.")

    wf.start("audited/order", {}, id="a")
    wf.drain()
    workflow_clock.advance("1s")
    wf.drain()
    wf.drain()
    assert wf.get_status("a").status == "failed", wf.get_status("a").error
    assert results == [("act", 1, True), ("act", 2, False), ("undo", 1, True)]
    ids = sorted(WorkflowInstance.objects.filter(workflow="audit").values_list("id", flat=True))
    assert len(ids) == 2 and ids[0].startswith("a:$compensate:act/audit#")
    assert ids[1].startswith("a:act/audit#")
