"""WorkflowTaskBackend: enqueue() starts a task instance in the caller's transaction,
`runworkflows --once` runs it, get_result() reads Django's TaskResult back."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

import django_workflows as wf
from django_workflows.models import WorkflowInstance
from django_workflows.tasks import WorkflowTaskBackend
from django_workflows.tasks.compat import (
    TaskResultDoesNotExist,
    TaskResultStatus,
    task_backends,
    task_enqueued,
    task_finished,
    task_started,
)
from django_workflows.tasks.names import TASK_WORKFLOW
from tests.tasks import tasks

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fresh_calls():
    tasks.calls.clear()
    yield
    tasks.calls.clear()


def once(*args: str) -> str:
    out = StringIO()
    call_command("runworkflows", "--once", "--poll-interval", "50ms", *args, stdout=out)
    return out.getvalue()


def test_the_backend_says_what_it_supports():
    backend = task_backends["default"]
    assert isinstance(backend, WorkflowTaskBackend)
    assert backend.supports_defer and backend.supports_priority
    assert backend.supports_get_result and backend.supports_async_task


def test_an_enqueued_task_runs_in_runworkflows_and_its_result_is_successful():
    result = tasks.add.enqueue(2, 3)
    assert result.status == TaskResultStatus.READY
    stored = wf.get_status(result.id)
    assert stored.workflow == TASK_WORKFLOW and stored.status == "pending"
    assert stored.input["task"] == "tests.tasks.tasks.add"
    ready = tasks.add.get_result(result.id)
    assert ready.status == TaskResultStatus.READY and ready.attempts == 0
    with pytest.raises(ValueError):
        ready.return_value  # noqa: B018 - not finished: Django's ValueError

    assert once() == "Ran 1 execution(s).\n"

    done = tasks.add.get_result(result.id)
    assert done.status == TaskResultStatus.SUCCESSFUL
    assert done.return_value == 5
    assert done.args == [2, 3] and done.kwargs == {}
    assert done.attempts == 1 and len(done.worker_ids) == 1 and done.worker_ids[0]
    assert done.errors == []
    assert done.enqueued_at <= done.started_at <= done.finished_at
    assert done.last_attempted_at == done.started_at
    assert done.is_finished
    assert tasks.calls == [("add", 2, 3)]
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 5


def test_get_result_reads_one_row_in_one_query():
    result = tasks.add.enqueue(4, 5)
    once()
    with CaptureQueriesContext(connection) as queries:
        done = tasks.add.get_result(result.id)
    assert done.status == TaskResultStatus.SUCCESSFUL and done.return_value == 9
    assert len(queries.captured_queries) == 1, [q["sql"] for q in queries.captured_queries]


def test_a_task_enqueued_in_a_rolled_back_transaction_never_runs():
    with pytest.raises(RuntimeError), transaction.atomic():
        result = tasks.add.enqueue(1, 1)
        assert WorkflowInstance.objects.filter(id=result.id).exists()
        raise RuntimeError("roll back")
    assert not WorkflowInstance.objects.filter(id=result.id).exists()
    assert once() == "Ran 0 execution(s).\n"
    assert tasks.calls == []
    with pytest.raises(TaskResultDoesNotExist):
        task_backends["default"].get_result(result.id)


def test_a_failing_task_is_failed_after_its_configured_attempts_with_each_traceback(
    workflow_clock,
):
    result = tasks.explode.enqueue("boom")
    once()
    between = tasks.explode.get_result(result.id)
    # Waiting for its retry: ready to run again, one attempt made, its error kept.
    assert between.status == TaskResultStatus.READY
    assert between.attempts == 1 and len(between.errors) == 1
    for _ in range(2):
        workflow_clock.advance("10s")
        once()
    failed = tasks.explode.get_result(result.id)
    assert failed.status == TaskResultStatus.FAILED
    assert tasks.calls == [("explode", "boom")] * 3
    assert failed.attempts == 3 and len(failed.errors) == 3
    error = failed.errors[-1]
    assert error.exception_class_path == "builtins.RuntimeError"
    assert error.exception_class is RuntimeError
    assert "Traceback (most recent call last)" in error.traceback
    assert "RuntimeError: boom" in error.traceback
    assert "in explode" in error.traceback
    # The engine's traceback of the step's last attempt: the same frames, below the engine's.
    step = wf.get_status(result.id, journal=True).journal[-1]
    assert step.error["traceback"].endswith(error.traceback.split("\n", 1)[1])
    assert failed.finished_at is not None
    with pytest.raises(ValueError):
        failed.return_value  # noqa: B018 - Django's ValueError("Task failed")


def test_takes_context_gives_the_attempt_number(workflow_clock):
    result = tasks.flaky.enqueue(3)
    once()
    workflow_clock.advance("10s")
    once()
    workflow_clock.advance("10s")
    once()
    done = tasks.flaky.get_result(result.id)
    assert done.status == TaskResultStatus.SUCCESSFUL
    assert done.return_value == {"attempt": 3, "id": result.id}
    assert tasks.calls == [("flaky", 1), ("flaky", 2), ("flaky", 3)]
    assert done.attempts == 3 and len(done.errors) == 2
    assert done.errors[0].exception_class_path == "builtins.ValueError"


def test_a_context_task_on_its_first_attempt_sees_attempt_one():
    result = tasks.with_context.enqueue()
    once()
    assert tasks.with_context.get_result(result.id).return_value == 1


def test_run_after_is_the_earliest_time_a_worker_runs_it(workflow_clock):
    when = workflow_clock.now() + timedelta(hours=1)
    result = tasks.record.using(run_after=when).enqueue("later")
    assert wf.get_status(result.id).wake_at == when
    assert once() == "Ran 0 execution(s).\n"
    assert tasks.record.get_result(result.id).status == TaskResultStatus.READY
    workflow_clock.advance("59m")
    assert once() == "Ran 0 execution(s).\n"
    workflow_clock.advance("1m")
    assert once() == "Ran 1 execution(s).\n"
    assert tasks.record.get_result(result.id).return_value == "later"


def test_higher_priority_runs_first():
    low = tasks.record.using(priority=-10).enqueue("low")
    default = tasks.record.enqueue("default")
    high = tasks.record.using(priority=50).enqueue("high")
    assert [wf.get_status(r.id).priority for r in (high, default, low)] == [51, 101, 111]
    once("--concurrency", "1")
    assert tasks.calls == ["high", "default", "low"]


def test_the_queue_name_is_the_instance_queue():
    mail = tasks.send_mail.enqueue("ada@example.com")
    gpu = tasks.record.using(queue_name="gpu").enqueue("x")
    assert wf.get_status(mail.id).queue == "mail"
    assert wf.get_status(gpu.id).queue == "gpu"
    assert [s.id for s in wf.list_instances(queue="mail")] == [mail.id]
    assert mail.task.queue_name == "mail"
    once()
    assert tasks.send_mail.get_result(mail.id).task.queue_name == "mail"
    assert tasks.send_mail.get_result(mail.id).return_value == "sent to ada@example.com"


def test_an_async_task_function_runs():
    result = tasks.sleepy.enqueue("quiet")
    once()
    assert tasks.sleepy.get_result(result.id).return_value == "QUIET"


def test_aenqueue_and_aget_result():
    # async_to_sync: the thread-sensitive database calls run on this thread, its connection.
    result = async_to_sync(tasks.add.aenqueue)(4, 5)
    once()
    done = async_to_sync(tasks.add.aget_result)(result.id)
    assert done.return_value == 9


def test_an_unknown_id_or_a_plain_instance_is_no_task_result(define):
    @define("plain")
    def plain(ctx, input):
        return 1

    wf.start("plain", None, id="plain-1")
    backend = task_backends["default"]
    for id in ("nope", "plain-1"):
        with pytest.raises(TaskResultDoesNotExist):
            backend.get_result(id)
    with pytest.raises(TaskResultDoesNotExist):
        async_to_sync(backend.aget_result)("nope")


def test_signals_are_sent_where_the_framework_defines_them(workflow_clock):
    seen: list[tuple[str, str, str]] = []

    def receiver(name):
        def receive(sender, task_result, **kwargs):
            assert sender is WorkflowTaskBackend
            seen.append((name, task_result.id, task_result.status))

        return receive

    receivers = {
        task_enqueued: receiver("enqueued"),
        task_started: receiver("started"),
        task_finished: receiver("finished"),
    }
    for signal, receive in receivers.items():
        signal.connect(receive)
    try:
        ok = tasks.add.enqueue(1, 2)
        assert seen == [("enqueued", ok.id, TaskResultStatus.READY)]
        once()
        assert seen[1:] == [
            ("started", ok.id, TaskResultStatus.RUNNING),
            ("finished", ok.id, TaskResultStatus.SUCCESSFUL),
        ]
        seen.clear()
        bad = tasks.explode.enqueue("x")
        once()
        for _ in range(2):
            workflow_clock.advance("10s")
            once()
        # Started at each attempt, finished once: when no attempt is left.
        assert [(n, s) for n, _, s in seen] == [
            ("enqueued", TaskResultStatus.READY),
            ("started", TaskResultStatus.RUNNING),
            ("started", TaskResultStatus.RUNNING),
            ("started", TaskResultStatus.RUNNING),
            ("finished", TaskResultStatus.FAILED),
        ]
        assert {id for _, id, _ in seen} == {bad.id}
    finally:
        for signal, receive in receivers.items():
            signal.disconnect(receive)


def test_a_running_task_reads_as_running_with_its_worker():
    result = tasks.look_at_itself.enqueue()
    once()
    assert tasks.look_at_itself.get_result(result.id).return_value == ["RUNNING", 1, True]


def test_a_running_task_with_attempts_left_reads_as_running_before_its_start_is_written():
    # With attempts left, the first attempt's start is written with its end: until then the
    # task reads as RUNNING from its claim, with the lease's worker.
    task = tasks.look_at_itself.using(backend="retrying")
    result = task.enqueue()
    once()
    assert task.get_result(result.id).return_value == ["RUNNING", 1, True]


def test_a_cancelled_task_is_failed():
    result = tasks.add.enqueue(1, 2)
    wf.cancel(result.id)
    once()
    cancelled = tasks.add.get_result(result.id)
    assert cancelled.status == TaskResultStatus.FAILED
    assert tasks.calls == []
    assert cancelled.finished_at is not None


def test_the_task_instance_keeps_its_payloads_decoded_through_a_codec():
    from django.test import override_settings

    from django_workflows.codecs import AesGcmPayloadCodec
    from django_workflows.models import WorkflowInstance

    codec = AesGcmPayloadCodec(keys={"k": "dGVzdHMtb25seS1rZXktMzItYnl0ZXMtbG9uZy4uLi4="})
    with override_settings(DJANGO_WORKFLOWS={"CODEC": codec}):
        result = tasks.record.enqueue("secret-name")
        raw = WorkflowInstance.objects.get(id=result.id).input
        assert "secret-name" not in str(raw)
        once()
        done = tasks.record.get_result(result.id)
        assert done.return_value == "secret-name" and done.args == ["secret-name"]


def test_a_keyboard_interrupt_stops_the_worker_without_finishing_the_task(caplog):
    # As Django's own backends: Ctrl-C in a task is no failure of it (no error, no
    # task_finished, no ERROR log of the framework's); it stops whoever runs it.
    finished: list[str] = []

    def receive(sender, task_result, **kwargs):
        finished.append(task_result.status)

    task_finished.connect(receive)
    try:
        result = tasks.interrupted.enqueue()
        with pytest.raises(KeyboardInterrupt):
            wf.drain()
    finally:
        task_finished.disconnect(receive)
    assert tasks.calls == ["interrupted"]
    assert finished == []
    assert tasks.interrupted.get_result(result.id).errors == []
    framework = [r for r in caplog.records if r.name.split(".")[0] in ("django_tasks", "django")]
    assert [r for r in framework if r.levelname == "ERROR" and "tasks" in r.name] == []
