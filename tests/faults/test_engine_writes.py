"""An error in the engine's own write is not the workflow's error: a cancelled statement or a
killed connection while the engine journals a step, starts a child or records a suspension
stops nothing but that statement. The engine writes again; the instance completes, and no
compensation runs."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction
from django.utils import timezone

import django_workflows as wf
from django_workflows.engine.registry import registry
from django_workflows.models import JournalEntry, WorkflowInstance
from django_workflows.store.backends import backend

from .conftest import interrupt_the_lock_waiter

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("server")]

FAULTS = ["statement", "connection"]


class World:
    """What the steps did, and a gate the first step waits at while the test takes its lock."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.in_charge = threading.Event()
        self.go_on = threading.Event()

    def charge(self, step) -> str:
        self.ran.append("charge")
        self.in_charge.set()
        assert self.go_on.wait(30)
        return "ch_1"


@pytest.fixture
def world():
    the_world = World()

    @wf.workflow("fault-order")
    def order(ctx, input):
        ctx.step("charge", the_world.charge, compensate=lambda r, s: the_world.ran.append("refund"))
        ctx.step("reserve", lambda s: the_world.ran.append("reserve") or "r_1")
        if input.get("child"):
            ctx.execute_child("fault-child", {}, id=input["child"])
        if input.get("wait"):
            ctx.wait_for_signal("delivery", "delivered", key=input["wait"], timeout="1h")
        return "done"

    @wf.workflow("fault-child")
    def child(ctx, input):
        return ctx.step("pack", lambda s: the_world.ran.append("pack") or "packed")

    yield the_world
    the_world.go_on.set()
    registry.unregister(order)
    registry.unregister(child)


def drain_in_a_thread() -> threading.Thread:
    def run() -> None:
        try:
            wf.drain()
        finally:
            connection.close()

    thread = threading.Thread(target=run, name="drain", daemon=True)
    thread.start()
    return thread


def finish(drainer: threading.Thread) -> None:
    drainer.join(60)
    assert not drainer.is_alive(), "drain() did not return"


def outcome(id: str) -> tuple:
    """The instance's status, output and error, decoded (CODEC=1 encrypts them in the rows)."""
    status = wf.get_status(id)
    return status.status, status.output, status.error


def attempts(id: str) -> dict[str, int]:
    return {
        name: document.get("attempt")
        for name, document in JournalEntry.objects.filter(instance_id=id).values_list(
            "name", "document"
        )
        if document.get("kind") == "step"
    }


@pytest.mark.parametrize("fault", FAULTS)
def test_an_interrupted_write_of_a_steps_result_is_written_again(world, fault):
    wf.start("fault-order", {}, id="o-1")
    drainer = drain_in_a_thread()
    assert world.in_charge.wait(30)
    with transaction.atomic():
        # An application transaction holds the instance's row: the write of the step's result
        # waits for it, and the test interrupts that write.
        WorkflowInstance.objects.select_for_update().get(pk="o-1")
        world.go_on.set()
        interrupt_the_lock_waiter(fault)
    finish(drainer)
    assert outcome("o-1") == ("completed", "done", None)
    assert world.ran == ["charge", "reserve"]  # no refund, each step once
    assert attempts("o-1") == {"charge": 1, "reserve": 1}


@pytest.mark.parametrize("fault", FAULTS)
def test_an_interrupted_start_of_a_child_starts_it_again(world, fault):
    wf.start("fault-order", {"child": "o-2-child"}, id="o-2")
    drainer = drain_in_a_thread()
    assert world.in_charge.wait(30)
    with transaction.atomic():
        # An uncommitted row with the child's id: the engine's insert of the child waits for
        # this transaction, and the test interrupts it; then the row goes away.
        now = timezone.now()
        WorkflowInstance.objects.create(
            id="o-2-child", workflow="placeholder", version=1, created_at=now, updated_at=now
        )
        world.go_on.set()
        interrupt_the_lock_waiter(fault)
        transaction.set_rollback(True)
    finish(drainer)
    assert outcome("o-2") == ("completed", "done", None)
    assert WorkflowInstance.objects.get(pk="o-2-child").status == "completed"
    assert world.ran == ["charge", "reserve", "pack"]


@pytest.mark.parametrize("fault", FAULTS)
def test_an_interrupted_suspension_is_recorded_again(world, fault):
    wf.start("fault-order", {"wait": "o-3"}, id="o-3")
    drainer = drain_in_a_thread()
    assert world.in_charge.wait(30)
    with transaction.atomic():
        # The signal lock, held as a signal's write holds it: the suspension, which registers
        # its wait under that lock, waits for it, and the test interrupts it.
        backend("default").lock_signals(shared=False)
        world.go_on.set()
        interrupt_the_lock_waiter(fault)
    finish(drainer)
    assert outcome("o-3") == ("suspended", None, None)
    waits = wf.get_status("o-3").waits
    assert [(wait.signal, wait.key) for wait in waits] == [("delivered", "o-3")]
    wf.signal("delivered", key="o-3")
    wf.drain()
    assert outcome("o-3") == ("completed", "done", None)
    assert world.ran == ["charge", "reserve"]
