"""Database faults inside an atomic step (ctx.step(..., atomic=True)), injected for real: the
step's transaction rolls back whole, the function's row with it, and the attempt that follows
writes the row once. A fault in the function's own statement is that attempt's error (the
step's retry policy applies); a fault in the engine's write of the completion, inside the same
transaction, is not the step's: the execution runs again from its journal."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

import django_workflows as wf
from django_workflows.models import JournalEntry, WorkflowInstance
from tests.procapp.models import Charge

from .conftest import interrupt_the_lock_waiter
from .test_engine_writes import FAULTS, drain_in_a_thread, finish

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("server")]


class Card:
    """An atomic charge that writes its Charge row, then reads a row the test may hold locked
    (`contended`), or waits at a gate (`gate`) so the test can lock the instance's row first."""

    def __init__(self, *, contended: bool = False, gate: bool = False) -> None:
        self.contended = contended
        self.gate = gate
        self.attempts: list[int] = []
        self.in_step = threading.Event()
        self.go_on = threading.Event()

    def charge(self, step) -> dict:
        self.attempts.append(step.attempt)
        Charge.objects.create(key=f"{step.idempotency_key}:{len(self.attempts)}", order_id="o")
        first = len(self.attempts) == 1
        if first and self.contended:
            # Waits for the test's lock: the test interrupts this statement or connection.
            Charge.objects.select_for_update().get(key="held")
        if first and self.gate:
            self.in_step.set()
            assert self.go_on.wait(30)
        return {"charged": len(self.attempts)}


def journal_attempt(id: str, name: str) -> int:
    return JournalEntry.objects.get(instance_id=id, name=name).document["attempt"]


@pytest.mark.parametrize("fault", FAULTS)
def test_a_fault_in_the_functions_own_statement_fails_the_attempt_and_rolls_its_row_back(
    define, fault
):
    card = Card(contended=True)

    @define("atomic-fault-fn")
    def order(ctx, input):
        return ctx.step("charge", card.charge, atomic=True, retry={"attempts": 3, "delay": "0s"})

    Charge.objects.create(key="held", order_id="held")
    wf.start("atomic-fault-fn", None, id="af-1")
    with transaction.atomic():
        Charge.objects.select_for_update().get(key="held")
        drainer = drain_in_a_thread()
        interrupt_the_lock_waiter(fault)
    finish(drainer)
    if wf.get_status("af-1").status != "completed":
        wf.drain()  # the retry's backoff of 0s may fall after the first drain's last claim
    status = wf.get_status("af-1")
    assert status.status == "completed", status.error
    assert status.output == {"charged": 2}
    assert card.attempts == [1, 2]  # the interrupted attempt failed; the retry completed
    # The first attempt's row went with its transaction; the second's committed with the step.
    assert list(Charge.objects.filter(order_id="o").values_list("key", flat=True)) == [
        "af-1:charge:2"
    ]
    assert journal_attempt("af-1", "charge") == 2


@pytest.mark.parametrize("fault", FAULTS)
def test_a_fault_in_the_write_of_the_completion_rolls_the_row_back_and_is_not_the_steps_error(
    define, fault
):
    card = Card(gate=True)

    @define("atomic-fault-commit")
    def order(ctx, input):
        return ctx.step("charge", card.charge, atomic=True, retry={"attempts": 1})

    wf.start("atomic-fault-commit", None, id="af-2")
    drainer = drain_in_a_thread()
    assert card.in_step.wait(30)
    with transaction.atomic():
        # An application transaction holds the instance's row: the completion's fenced write,
        # inside the step's transaction, waits for it, and the test interrupts that write.
        WorkflowInstance.objects.select_for_update().get(pk="af-2")
        card.go_on.set()
        interrupt_the_lock_waiter(fault)
    finish(drainer)
    for _ in range(3):  # the execution that stopped is claimed again once it is handed back
        if wf.get_status("af-2").status == "completed":
            break
        wf.drain()
    status = wf.get_status("af-2")
    # One attempt allowed, yet it completed: the fault was not counted as the step's failure.
    assert status.status == "completed", status.error
    assert status.output == {"charged": 2}
    assert len(card.attempts) == 2
    assert list(Charge.objects.filter(order_id="o").values_list("key", flat=True)) == [
        "af-2:charge:2"
    ]
    assert journal_attempt("af-2", "charge") == 1  # the rolled-back attempt is not counted
    connection.close()
