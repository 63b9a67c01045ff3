"""The gate at a step's start (engine/threads.py): gather branches' steps start only once no
branch runs workflow code, all together, unless one of the branches parked the instance.

Real threads, no database: the gate's decisions are about the moment the last branch reaches a
step's start, whichever thread the scheduler lets run first afterwards."""

from __future__ import annotations

import threading
import time

from django_workflows.engine.threads import StartGate, Suspension


def two_branches() -> tuple[StartGate, Suspension]:
    """A gate as ctx.gather leaves it with two branches running workflow code."""
    suspension = Suspension()
    gate = StartGate(suspension)
    gate.change(1)
    return gate, suspension


def enter_in_thread(gate: StartGate, active: int = 1) -> tuple[threading.Thread, list[bool]]:
    """A branch reaching a step's start in a thread of its own, once it waits at the gate
    (`active` branches still run workflow code)."""
    decided: list[bool] = []
    thread = threading.Thread(target=lambda: decided.append(gate.enter_step()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while True:  # the branch holds the gate's lock from its arrival until it waits
        with gate._quiet:
            if gate._active == active:
                break
        assert time.monotonic() < deadline, "the branch never reached the gate"
        time.sleep(0.001)
    return thread, decided


def test_a_waiter_slow_to_wake_starts_with_the_branch_that_arrived_last():
    gate, suspension = two_branches()
    waiter, decided = enter_in_thread(gate)
    # The waiter cannot get the lock back (it is reentrant: this thread still may) while the
    # other branch arrives, passes, runs its step, leaves it, sleeps and ends.
    with gate._quiet:
        assert gate.enter_step() is False
        gate.leave_step()
        suspension.pending = True  # ctx.sleep() parks the instance
        gate.change(-1)  # the branch ends
        assert decided == []
    waiter.join(10)
    # Both steps reached their start before the sleep parked: the waiter's starts too.
    assert decided == [False]


def test_waiters_are_told_the_instance_parked_when_the_last_branch_ends_with_a_sleep():
    gate, suspension = two_branches()
    gate.change(1)  # a third branch
    first, first_decided = enter_in_thread(gate, active=2)
    second, second_decided = enter_in_thread(gate, active=1)
    suspension.pending = True  # the third branch sleeps
    gate.change(-1)  # and ends
    first.join(10)
    second.join(10)
    assert (first_decided, second_decided) == ([True], [True])


def test_a_waiter_waits_while_another_branch_runs_workflow_code():
    gate, _ = two_branches()
    waiter, decided = enter_in_thread(gate)
    time.sleep(0.1)
    assert decided == []
    gate.change(-1)  # the other branch ends without a step
    waiter.join(10)
    assert decided == [False]
