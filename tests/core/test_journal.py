"""The journal: first-write order, kinds, and its limits."""

from __future__ import annotations

import pytest

import django_workflows as wf
from django_workflows.jsonvalues import size
from django_workflows.models import JournalEntry
from tests.core.helpers import order

pytestmark = pytest.mark.django_db


def test_journal_entries_come_in_first_write_order_with_their_kinds(world, workflow_clock):
    wf.start("order-fulfilment", order(), id="o")
    wf.drain()
    wf.signal("shipment.delivered", {"trackingNumber": "T"}, key="71e1973d")
    wf.drain()
    workflow_clock.advance("7d")
    wf.drain()
    status = wf.get_status("o", journal=True)
    assert [(e.name, e.kind, e.status) for e in status.journal] == [
        ("charge-payment", "step", "completed"),
        ("reserve-stock", "step", "completed"),
        ("await-delivery", "wait", "completed"),
        ("delivered", "commit", "completed"),
        ("before-review-request", "sleep", "completed"),
        ("send-review-request", "step", "completed"),
    ]
    charge = status.journal[0]
    assert charge.attempt == 1
    assert charge.result == {"charge_id": "ch_1", "amount": 2499}
    assert charge.started_at == charge.finished_at == status.created_at
    assert status.journal[2].result["value"] == {"trackingNumber": "T"}


def test_without_journal_get_status_leaves_it_out(workflow_clock):
    wf.start("values", None, id="v")
    assert wf.get_status("v").journal is None


def test_a_large_journal_is_reported_once_with_the_journal_large_event(
    world, workflow_clock, settings, events
):
    settings.DJANGO_WORKFLOWS = {"JOURNAL": {"WARN_ENTRIES": 3}}
    wf.start("many-steps", {"n": 6}, id="many")
    wf.drain()
    assert wf.get_status("many").status == "completed"
    large = [e for e in events if e.type == "journal-large"]
    assert len(large) == 1
    assert large[0].id == "many"
    assert large[0].data["entries"] == 3
    assert "bytes" in large[0].data


def test_a_journal_over_warn_bytes_is_reported_once_across_executions(
    define, workflow_clock, settings, events
):
    settings.DJANGO_WORKFLOWS = {"JOURNAL": {"WARN_BYTES": 2000}}

    @define("bulky")
    def bulky(ctx, input):
        for i in range(4):
            ctx.step(f"load-{i}", lambda step: "x" * 800)
            ctx.sleep(f"pause-{i}", "1m")  # each round in an execution of its own

    wf.start("bulky", None, id="bulky")
    for _ in range(5):
        wf.drain()
        workflow_clock.advance("1m")
    assert wf.get_status("bulky").status == "completed"
    large = [e for e in events if e.type == "journal-large"]
    assert len(large) == 1 and large[0].data["bytes"] >= 2000


def test_a_journal_at_its_limit_fails_the_instance_after_compensating(
    world, workflow_clock, settings
):
    settings.DJANGO_WORKFLOWS = {"JOURNAL": {"MAX_ENTRIES": 5}}
    wf.start("many-steps", {"n": 10}, id="many")
    wf.drain()
    status = wf.get_status("many", journal=True)
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowJournalLimitError"
    steps = [e for e in status.journal if e.kind == "step"]
    assert len(steps) == 5
    assert [e.name for e in status.journal if e.kind == "compensation"] == [
        "$compensate:charge-payment"
    ]
    assert list(world.refunds.values()) == ["ch_1"]


def test_journal_limits_are_measured_in_bytes_too(world, workflow_clock, settings):
    settings.DJANGO_WORKFLOWS = {"JOURNAL": {"MAX_BYTES": 300}}
    wf.start("many-steps", {"n": 50}, id="bytes")
    wf.drain()
    status = wf.get_status("bytes")
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowJournalLimitError"


def test_the_journal_is_measured_as_its_entries_are_stored(
    define, workflow_clock, settings, events
):
    settings.DJANGO_WORKFLOWS = {"JOURNAL": {"WARN_BYTES": 1000}}

    @define("measured")
    def measured(ctx, input):
        for i in range(8):
            ctx.step(f"load-{i}", lambda step: "é" * 100)  # two bytes each in UTF-8

    wf.start("measured", None, id="measured")
    wf.drain()
    (large,) = [e for e in events if e.type == "journal-large"]
    stored = JournalEntry.objects.get(instance_id="measured", name="load-0").document
    # Every entry before the one about to start, each as it ended (not as it started).
    assert large.data["bytes"] == (large.data["entries"] - 1) * size(stored)
    assert large.data["bytes"] >= 1000 > large.data["bytes"] - size(stored)
