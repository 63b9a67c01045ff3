"""What escapes workflow code but is not an Exception: a step raising SystemExit (a failed
attempt, as any error) or KeyboardInterrupt (it stops the worker or drain(), the instance handed
back first), ctx called from a thread of the workflow's own, a step function that takes no
argument. None of them leaves an instance leased and running."""

from __future__ import annotations

import logging
import threading

import pytest
from django.db import connections
from django.utils import timezone

import django_workflows as wf
from django_workflows.engine.registry import registry
from django_workflows.models import JournalEntry, WorkflowInstance
from django_workflows.worker import Worker
from tests.helpers import wait_until, worker_thread

pytestmark = pytest.mark.django_db(transaction=True)

KINDS = {"exit": SystemExit, "interrupt": KeyboardInterrupt, "generator": GeneratorExit}


def raise_first(error: type[BaseException]):
    """Raises `error` at its first attempt; returns "done" at the next."""

    def fn(step):
        if step.attempt == 1:
            raise error(3) if error is SystemExit else error()
        return "done"

    return fn


@pytest.fixture
def escaping():
    @wf.workflow("escaping")
    def escaping_workflow(ctx, input):
        kind, attempts = input
        return ctx.step(
            "leave", raise_first(KINDS[kind]), retry=wf.Retry(attempts=attempts, delay="1h")
        )

    @wf.workflow("escaping-code")
    def escaping_code(ctx, input):
        ctx.step("before", lambda step: 1)
        raise KINDS[input]()

    @wf.workflow("foreign-thread")
    def foreign_thread(ctx, input):
        def elsewhere():
            try:
                ctx.step("from-a-thread", lambda step: 1)
            except BaseException:  # noqa: BLE001 - the workflow's own thread sees it anyway
                pass

        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join(10)
        return ctx.step("after", lambda step: 2)

    @wf.workflow("ctx-in-a-timed-step")
    def ctx_in_a_timed_step(ctx, input):
        return ctx.step("timed", lambda step: ctx.now().isoformat(), timeout="10s")

    @wf.workflow("no-argument")
    def no_argument(ctx, input):
        return ctx.step("forgot-step", lambda: 1)

    yield
    for definition in (
        escaping_workflow,
        escaping_code,
        foreign_thread,
        ctx_in_a_timed_step,
        no_argument,
    ):
        registry.unregister(definition)


def leave_entry(id: str) -> dict:
    return JournalEntry.objects.get(instance_id=id, name="leave").document


def released(id: str) -> WorkflowInstance:
    instance = WorkflowInstance.objects.get(pk=id)
    assert instance.lease_token is None and instance.lease_until is None
    return instance


def test_a_steps_system_exit_is_a_failed_attempt_and_drain_returns(escaping):
    wf.start("escaping", ["exit", 2], id="esc-exit")
    assert wf.drain() == 1  # SystemExit does not reach the caller
    assert released("esc-exit").status == "suspended"  # its retry waits an hour
    entry = leave_entry("esc-exit")
    assert (entry["status"], entry["attempt"], entry["error"]["name"]) == (
        "pending",
        1,
        "SystemExit",
    )


def test_a_steps_system_exit_with_no_attempt_left_fails_the_instance(escaping):
    wf.start("escaping", ["exit", 1], id="esc-exit-1")
    wf.drain()
    status = wf.get_status("esc-exit-1")
    assert status.status == "failed"
    assert status.error["cause"]["name"] == "SystemExit", status.error
    released("esc-exit-1")


def test_workflow_code_that_raises_system_exit_fails_the_instance(escaping):
    wf.start("escaping-code", "exit", id="esc-code")
    wf.drain()
    status = wf.get_status("esc-code")
    assert (status.status, status.error["name"]) == ("failed", "SystemExit")
    released("esc-code")


@pytest.mark.parametrize("kind", ["interrupt", "generator"])
def test_drain_hands_the_instance_back_before_a_steps_keyboard_interrupt_propagates(escaping, kind):
    wf.start("escaping", [kind, 2], id=f"esc-{kind}")
    with pytest.raises(KINDS[kind]):
        wf.drain()
    instance = released(f"esc-{kind}")
    # Handed back, due at once; the attempt stopped with the process, as after a crash.
    assert instance.status == "suspended"
    assert instance.wake_at is not None and instance.wake_at <= timezone.now()
    entry = leave_entry(f"esc-{kind}")
    assert (entry["status"], entry["attempt"]) == ("running", 1)
    assert wf.drain() == 1  # the next run takes it at once: attempt 2
    status = wf.get_status(f"esc-{kind}")
    assert (status.status, status.output) == ("completed", "done")


def test_drain_hands_back_an_instance_whose_code_raises_keyboard_interrupt(escaping):
    wf.start("escaping-code", "interrupt", id="esc-code-int")
    with pytest.raises(KeyboardInterrupt):
        wf.drain()
    instance = released("esc-code-int")
    assert instance.status == "suspended"
    assert instance.wake_at is not None and instance.wake_at <= timezone.now()


def test_a_worker_logs_a_steps_system_exit_and_runs_on(escaping, caplog):
    wf.start("escaping", ["exit", 2], id="esc-pool")
    with caplog.at_level(logging.WARNING, logger="django_workflows"):
        with worker_thread(poll_interval="50ms"):
            assert wait_until(
                lambda: WorkflowInstance.objects.filter(
                    pk="esc-pool", status="suspended", lease_token__isnull=True
                ).exists(),
                timeout=20,
            )
            # The worker runs on: it takes the next instance.
            wf.start("escaping", ["exit", 1], id="esc-pool-2")
            assert wait_until(
                lambda: WorkflowInstance.objects.filter(pk="esc-pool-2", status="failed").exists(),
                timeout=20,
            )
    assert leave_entry("esc-pool")["error"]["name"] == "SystemExit"
    logged = [r for r in caplog.records if "esc-pool" in r.getMessage() and r.exc_info]
    assert logged and logged[0].levelno == logging.ERROR
    assert logged[0].exc_info[0] is SystemExit  # with its traceback


def test_a_steps_keyboard_interrupt_stops_the_worker_after_handing_the_instance_back(escaping):
    wf.start("escaping", ["interrupt", 2], id="esc-pool-int")
    worker = Worker(poll_interval="50ms")
    raised: list = []

    def run() -> None:
        try:
            worker.run()
        except BaseException as error:  # noqa: BLE001 - what run() lets out is the test's
            raised.append(error)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, name="test-worker", daemon=True)
    thread.start()
    thread.join(30)
    try:
        assert not thread.is_alive(), "the worker did not stop"
    finally:
        worker.stop()
    assert [type(error) for error in raised] == [KeyboardInterrupt]
    instance = released("esc-pool-int")
    assert instance.status == "suspended"
    assert instance.wake_at is not None and instance.wake_at <= timezone.now()
    assert wf.drain() == 1  # another worker takes it at once
    assert wf.get_status("esc-pool-int").output == "done"


def test_ctx_from_a_thread_the_workflow_started_fails_it_as_a_definition_error(escaping):
    wf.start("foreign-thread", None, id="foreign")
    wf.drain()
    instance = wf.get_status("foreign")
    assert instance.status == "failed"
    assert instance.error["name"] == "WorkflowDefinitionError"
    assert "thread" in instance.error["message"]


def test_a_step_function_that_takes_no_argument_fails_at_once_naming_it(escaping):
    wf.start("no-argument", None, id="no-arg")
    wf.drain()
    instance = wf.get_status("no-arg")
    assert instance.status == "failed"
    assert instance.error["name"] == "WorkflowDefinitionError"
    assert "lambda step: ..." in instance.error["message"]
    assert not JournalEntry.objects.filter(instance_id="no-arg", name="forgot-step").exists()


def test_ctx_inside_a_step_that_runs_in_a_thread_of_its_own_is_named_as_inside_a_step(escaping):
    # A step with a timeout runs in a thread of its own: still "inside a step", not a thread
    # of the workflow's.
    wf.start("ctx-in-a-timed-step", None, id="timed-ctx")
    wf.drain()
    instance = wf.get_status("timed-ctx")
    assert (instance.status, instance.error["name"]) == ("failed", "WorkflowDefinitionError")
    assert "inside a step's function" in instance.error["message"]


@pytest.mark.parametrize(
    ("make", "fits"),
    [
        (lambda seen: lambda step: seen, True),
        (lambda seen: lambda step, extra=None: seen, True),
        (lambda seen: lambda *args: seen, True),
        (lambda seen: lambda: seen, False),
        (lambda seen: lambda step, more: seen, False),
        (lambda seen: lambda step, *, key: seen, False),
    ],
)
def test_a_step_functions_arguments_are_checked_the_same_at_every_call(define, make, fits):
    """The check reads a lambda's signature once per code object: the second instance, whose
    lambdas are new functions with the same code, is checked as the first."""

    @define("arity")
    def run(ctx, input):
        return ctx.step("s", make(input))

    for id in ("arity-1", "arity-2"):
        wf.start("arity", id, id=id)
        wf.drain()
        status = wf.get_status(id)
        if fits:
            assert (status.status, status.output) == ("completed", id)
        else:
            assert status.status == "failed"
            assert status.error["name"] == "WorkflowDefinitionError"
            assert "must take 1 argument" in status.error["message"]


def test_a_keyboard_interrupt_in_a_gather_branch_stops_the_execution(define):
    @define("escaping-gather")
    def gathered(ctx, input):
        return ctx.gather(
            lambda: ctx.step("leave", raise_first(KeyboardInterrupt)),
            lambda: [ctx.step("one", lambda step: 1), ctx.step("two", lambda step: 2)],
        )

    wf.start("escaping-gather", None, id="esc-gather")
    with pytest.raises(KeyboardInterrupt):
        wf.drain()
    instance = released("esc-gather")
    assert instance.status == "suspended"
    assert instance.wake_at is not None and instance.wake_at <= timezone.now()
    assert wf.drain() == 1
    status = wf.get_status("esc-gather")
    assert (status.status, status.output) == ("completed", ["done", [1, 2]]), status.error
