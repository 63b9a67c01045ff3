"""What escapes workflow code but is not an Exception: a step raising SystemExit or
KeyboardInterrupt, ctx called from a thread of the workflow's own, a step function that takes
no argument. None of them leaves an instance leased and running."""

from __future__ import annotations

import logging
import threading

import pytest

import django_workflows as wf
from django_workflows.models import JournalEntry, WorkflowInstance
from django_workflows.registry import registry
from tests.helpers import wait_until, worker_thread

pytestmark = pytest.mark.django_db(transaction=True)


def raise_(error: BaseException):
    def fn(step):
        raise error

    return fn


@pytest.fixture
def escaping():
    @wf.workflow("escaping")
    def escaping_workflow(ctx, input):
        kinds = {
            "exit": SystemExit(3),
            "interrupt": KeyboardInterrupt(),
            "generator": GeneratorExit(),
        }
        return ctx.step("leave", raise_(kinds[input]), retry=wf.Retry(attempts=2, delay="1h"))

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
    for definition in (escaping_workflow, foreign_thread, ctx_in_a_timed_step, no_argument):
        registry.unregister(definition)


def leave_entry(id: str) -> dict:
    return JournalEntry.objects.get(instance_id=id, name="leave").document


@pytest.mark.parametrize(
    "kind, error",
    [("exit", SystemExit), ("interrupt", KeyboardInterrupt), ("generator", GeneratorExit)],
)
def test_drain_releases_the_instance_before_a_steps_base_exception_propagates(
    escaping, kind, error
):
    wf.start("escaping", kind, id=f"esc-{kind}")
    with pytest.raises(error):
        wf.drain()
    instance = WorkflowInstance.objects.get(pk=f"esc-{kind}")
    # The attempt failed with an error naming it, and waits for its retry, released.
    assert (instance.status, instance.lease_token) == ("suspended", None)
    entry = leave_entry(f"esc-{kind}")
    assert (entry["status"], entry["attempt"], entry["error"]["name"]) == (
        "pending",
        1,
        error.__name__,
    )


def test_a_worker_logs_a_steps_system_exit_and_releases_the_instance(escaping, caplog):
    wf.start("escaping", "exit", id="esc-pool")
    with caplog.at_level(logging.WARNING, logger="django_workflows"):
        with worker_thread(poll_interval="50ms"):
            assert wait_until(
                lambda: WorkflowInstance.objects.filter(
                    pk="esc-pool", status="suspended", lease_token__isnull=True
                ).exists(),
                timeout=20,
            )
    assert leave_entry("esc-pool")["error"]["name"] == "SystemExit"
    logged = [r for r in caplog.records if "esc-pool" in r.getMessage() and r.exc_info]
    assert logged and logged[0].levelno == logging.ERROR
    assert logged[0].exc_info[0] is SystemExit  # with its traceback


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
