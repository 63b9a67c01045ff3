"""A child's final write racing its parent's suspension, with real threads: no end is lost."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows.engine.registry import registry
from django_workflows.models import WorkflowInstance

from .conftest import race, threads_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def family():
    @wf.workflow("race-child")
    def child(ctx, input):
        return ctx.step("double", lambda step: input["n"] * 2)

    @wf.workflow("race-parent")
    def parent(ctx, input):
        return ctx.execute_child("race-child", input)

    yield
    registry.unregister(child)
    registry.unregister(parent)


def test_children_ending_while_their_parents_suspend_always_wake_them(family):
    count = 40 if connection.vendor != "sqlite" else 12
    ids = [wf.start("race-parent", {"n": i}, id=f"parent-{i}").id for i in range(count)]
    drainers = threads_for(server=6, sqlite=2)
    deadline = time.monotonic() + 60
    done = threading.Event()

    def drain_until_all_completed() -> None:
        while not done.is_set() and time.monotonic() < deadline:
            wf.drain()
            completed = WorkflowInstance.objects.filter(id__in=ids, status="completed").count()
            if completed == count:
                done.set()

    race([drain_until_all_completed] * drainers)
    outputs = {
        s.id: (s.status, s.output) for s in wf.list_instances(workflow="race-parent", limit=1000)
    }
    assert outputs == {f"parent-{i}": ("completed", i * 2) for i in range(count)}
    assert (
        WorkflowInstance.objects.filter(workflow="race-child", status="completed").count() == count
    )
