"""Signals: durable, deduplicated by id, matched by exact key, consumed once per instance."""

from __future__ import annotations

import pytest

import django_workflows as wf
from django_workflows.models import Signal

pytestmark = pytest.mark.django_db


def test_a_signal_sent_before_the_wait_is_reached_still_counts(workflow_clock):
    wf.start("wait-once", {"key": "A"}, id="early")
    sent = wf.signal("ping", {"n": 1}, key="A")
    assert sent.created is True and sent.woken == 0  # nobody waits yet
    assert wf.drain() == 1
    status = wf.get_status("early")
    assert status.status == "completed", status.error
    assert status.output == {"n": 1}


def test_a_signal_wakes_the_instance_waiting_for_it(workflow_clock):
    wf.start("wait-once", {"key": "A"}, id="waiting")
    wf.drain()
    assert [(w.signal, w.key) for w in wf.get_status("waiting").waits] == [("ping", "A")]
    sent = wf.signal("ping", {"n": 1}, key="A")
    assert sent.woken == 1
    assert wf.drain() == 1
    assert wf.get_status("waiting").output == {"n": 1}


def test_a_signal_with_the_same_id_is_stored_once(workflow_clock):
    first = wf.signal("shipment.delivered", {"trackingNumber": "TRK1"}, key="o1", id="TRK1")
    repeat = wf.signal("shipment.delivered", {"trackingNumber": "TRK1"}, key="o1", id="TRK1")
    assert first.created is True
    assert repeat.created is False
    assert repeat.signal_id == first.signal_id
    assert Signal.objects.filter(name="shipment.delivered").count() == 1


def test_signals_without_an_id_are_stored_each_time(workflow_clock):
    first = wf.signal("ping", {"n": 1})
    second = wf.signal("ping", {"n": 1})
    assert second.signal_id > first.signal_id
    assert Signal.objects.filter(name="ping").count() == 2


def test_a_repeated_id_with_another_key_is_an_id_conflict(workflow_clock):
    wf.signal("ping", None, key="A", id="same")
    with pytest.raises(wf.WorkflowIdConflictError):
        wf.signal("ping", None, key="B", id="same")


def test_a_signal_whose_key_does_not_match_does_not_wake_the_wait(workflow_clock):
    wf.start("wait-once", {"key": "A"}, id="keyed")
    wf.drain()
    assert wf.signal("ping", {"n": 1}, key="B").woken == 0
    assert wf.signal("ping", {"n": 2}).woken == 0  # no key is not a wildcard either
    assert wf.drain() == 0
    assert wf.get_status("keyed").status == "suspended"


def test_a_wait_without_a_key_only_takes_signals_sent_without_one(workflow_clock):
    wf.start("wait-once", {}, id="unkeyed")
    wf.drain()
    assert wf.signal("ping", {"n": 1}, key="A").woken == 0
    wf.drain()
    assert wf.get_status("unkeyed").status == "suspended"
    assert wf.signal("ping", {"n": 2}).woken == 1
    wf.drain()
    assert wf.get_status("unkeyed").output == {"n": 2}


def test_each_signal_is_consumed_at_most_once_per_instance(workflow_clock):
    wf.start("wait-twice", None, id="twice")
    wf.drain()
    wf.signal("ping", {"n": 1})
    wf.drain()
    status = wf.get_status("twice")
    assert status.status == "suspended"  # the second wait does not take the first signal again
    wf.signal("ping", {"n": 2})
    wf.drain()
    status = wf.get_status("twice")
    assert status.status == "completed"
    assert status.output == [{"n": 1}, {"n": 2}]


def test_one_signal_reaches_every_instance_waiting_for_it(workflow_clock):
    wf.start("wait-once", {"key": "A"}, id="one")
    wf.start("wait-once", {"key": "A"}, id="two")
    wf.drain()
    assert wf.signal("ping", {"n": 1}, key="A").woken == 2
    wf.drain()
    assert wf.get_status("one").output == {"n": 1}
    assert wf.get_status("two").output == {"n": 1}


def test_a_wait_resolves_with_none_once_its_timeout_passes(workflow_clock):
    wf.start("wait-once", {"timeout": "1h"}, id="timeout")
    wf.drain()
    status = wf.get_status("timeout")
    assert status.wake_at == workflow_clock.now() + __import__("datetime").timedelta(hours=1)
    workflow_clock.advance("1h")
    assert wf.drain() == 1
    status = wf.get_status("timeout")
    assert status.status == "completed"
    assert status.output is None


def test_a_signal_recorded_after_the_deadline_loses_to_the_timeout(workflow_clock):
    wf.start("wait-once", {"timeout": "1h"}, id="late")
    wf.drain()
    workflow_clock.advance("2h")  # no worker ran when the deadline passed
    wf.signal("ping", {"n": 1})
    wf.drain()
    status = wf.get_status("late")
    assert status.status == "completed"
    assert status.output is None


def test_a_signal_recorded_before_the_deadline_wins_even_if_the_worker_runs_later(workflow_clock):
    wf.start("wait-once", {"timeout": "1h"}, id="in-time")
    wf.drain()
    workflow_clock.advance("30m")
    wf.signal("ping", {"n": 1})
    workflow_clock.advance("2h")
    wf.drain()
    assert wf.get_status("in-time").output == {"n": 1}


def test_wait_for_any_resolves_with_the_signal_recorded_first(workflow_clock):
    wf.start("wait-any-two", None, id="any")
    wf.drain()
    assert {w.signal for w in wf.get_status("any").waits} == {"a", "b"}
    wf.signal("b", {"from": "b"})
    wf.signal("a", {"from": "a"})
    wf.drain()
    assert wf.get_status("any").output == {"key": "b", "value": {"from": "b"}}


def test_wait_for_any_picks_the_first_recorded_signal_whichever_condition_it_matched(
    workflow_clock,
):
    wf.start("wait-any-two", None, id="any-early")
    wf.signal("b", {"from": "b"})
    wf.signal("a", {"from": "a"})
    wf.drain()
    assert wf.get_status("any-early").output == {"key": "b", "value": {"from": "b"}}


def test_match_filters_the_signals_by_payload(workflow_clock):
    wf.start("wait-match", None, id="match")
    wf.drain()
    wf.signal("ping", {"ok": False})
    wf.drain()
    assert wf.get_status("match").status == "suspended"
    wf.signal("ping", {"ok": True})
    wf.drain()
    status = wf.get_status("match")
    assert status.status == "completed"
    assert status.output == {"ok": True}


def test_a_signal_object_and_its_name_are_the_same(workflow_clock):
    from tests.testapp.workflows import shipment_delivered

    first = wf.signal(shipment_delivered, {"trackingNumber": "T"}, id="T")
    assert (
        wf.signal("shipment.delivered", {"trackingNumber": "T"}, id="T").signal_id
        == first.signal_id
    )
