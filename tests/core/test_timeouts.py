"""The run timeout: the deadline bounds the whole instance."""

from __future__ import annotations

from datetime import timedelta

import pytest

import django_workflows as wf
from tests.core.helpers import journal

pytestmark = pytest.mark.django_db


def test_a_parked_instance_wakes_at_its_deadline_even_if_its_sleep_ends_later(
    world, workflow_clock
):
    started = workflow_clock.now()
    wf.start("timed", None, id="timed")
    assert wf.drain() == 1
    status = wf.get_status("timed")
    assert status.status == "suspended"
    assert status.deadline == started + timedelta(hours=1)
    assert status.wake_at == started + timedelta(hours=1)  # not the sleep's 2h


def test_the_run_timeout_of_the_decorator_fails_the_instance_after_compensating(
    world, workflow_clock
):
    wf.start("timed", None, id="timed")
    wf.drain()
    workflow_clock.advance("1h")
    assert wf.drain() == 1
    status = wf.get_status("timed")
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowTimeoutError"
    assert ("$compensate:charge-payment", "compensation", "completed") in journal("timed")
    assert list(world.refunds.values()) == ["ch_1"]
    assert world.mails == {}  # the step after the sleep never ran


def test_the_timeout_of_start_overrides_the_decorators(world, workflow_clock):
    started = workflow_clock.now()
    wf.start("timed", None, id="short", timeout="10m")
    wf.drain()
    status = wf.get_status("short")
    assert status.deadline == started + timedelta(minutes=10)
    assert status.wake_at == started + timedelta(minutes=10)
    workflow_clock.advance("10m")
    wf.drain()
    status = wf.get_status("short")
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowTimeoutError"
    assert list(world.refunds.values()) == ["ch_1"]


def test_a_start_timeout_bounds_a_workflow_without_one(world, workflow_clock):
    wf.start("wait-once", {}, id="bounded", timeout="1d")
    wf.drain()
    assert wf.get_status("bounded").wake_at == workflow_clock.now() + timedelta(days=1)
    workflow_clock.advance("1d")
    wf.drain()
    status = wf.get_status("bounded")
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowTimeoutError"


def test_an_instance_that_finishes_before_its_deadline_completes(world, workflow_clock):
    wf.start("timed", None, id="long-enough", timeout="3h")
    wf.drain()
    workflow_clock.advance("2h")
    wf.drain()
    status = wf.get_status("long-enough")
    assert status.status == "completed"
    assert status.output == "done"
    assert world.refunds == {}
