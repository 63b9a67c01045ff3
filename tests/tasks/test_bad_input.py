"""What enqueue() refuses, with Django's documented errors, before anything is written; and
the system checks of a misconfigured backend."""

from __future__ import annotations

from datetime import datetime

import pytest
from asgiref.sync import async_to_sync
from django.db import transaction
from django.test import override_settings

from django_workflows.models import WorkflowInstance
from django_workflows.tasks.compat import InvalidTask, TaskResultDoesNotExist, task_backends
from tests.tasks import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def nothing_written() -> bool:
    return not WorkflowInstance.objects.exists()


def test_non_json_arguments_are_djangos_type_error_and_nothing_is_written():
    with pytest.raises(TypeError):
        tasks.add.enqueue(object(), 1)
    with pytest.raises(TypeError):
        tasks.record.enqueue(name={1, 2})
    assert nothing_written()


def test_a_priority_outside_djangos_range_is_refused():
    for priority in (101, -101):
        with pytest.raises(InvalidTask, match="priority"):
            tasks.add.using(priority=priority)
    assert nothing_written()


def test_a_naive_run_after_is_refused():
    with pytest.raises(InvalidTask, match="aware"):
        tasks.add.using(run_after=datetime(2030, 1, 1))
    assert nothing_written()


def test_a_queue_not_in_queues_is_refused():
    with pytest.raises(InvalidTask, match="nowhere"):
        tasks.add.using(queue_name="nowhere")
    assert nothing_written()


def test_a_task_a_worker_could_not_import_is_refused():
    hidden = tasks.define_hidden()
    with pytest.raises(InvalidTask, match="module path"):
        hidden.enqueue()
    assert nothing_written()


def test_the_callers_transaction_stays_usable_after_a_refusal():
    with transaction.atomic():
        with pytest.raises(TypeError):
            tasks.add.enqueue(object(), 1)
        result = tasks.add.enqueue(1, 2)
    assert WorkflowInstance.objects.filter(id=result.id).exists()


BAD = {
    "default": {
        "BACKEND": "django_workflows.tasks.WorkflowTaskBackend",
        "QUEUES": ["default", "has space"],
        "OPTIONS": {"RETRY": {"attempts": 0}, "COLOUR": "blue"},
    },
}


@pytest.mark.parametrize("id", ["a\x00b", "\x00", "a\ud800"])
def test_get_result_of_an_id_no_instance_can_have_is_task_result_does_not_exist(id):
    # PostgreSQL refused the NUL in the query itself (DataError) before the check.
    backend = task_backends["default"]
    with pytest.raises(TaskResultDoesNotExist):
        backend.get_result(id)
    with pytest.raises(TaskResultDoesNotExist):
        async_to_sync(backend.aget_result)(id)


def test_check_reports_bad_options_retry_and_queues():
    with override_settings(TASKS=BAD):
        backend = task_backends["default"]
        messages = list(backend.check())
        text = " ".join(m.msg for m in messages)
        ids = {m.id for m in messages}
        assert ids == {"django_workflows.tasks.E001", "django_workflows.tasks.E002"}
        assert "COLOUR" in text and "attempts" in text and "has space" in text
        with pytest.raises(Exception, match="RETRY"):
            backend.enqueue(tasks.add, (1, 2), {})
    assert nothing_written()


def test_check_is_quiet_for_a_good_configuration():
    assert list(task_backends["default"].check()) == []
    assert list(task_backends["retrying"].check()) == []


def test_retry_must_be_a_dict():
    settings = {"default": {**BAD["default"], "QUEUES": ["default"], "OPTIONS": {"RETRY": 3}}}
    with override_settings(TASKS=settings):
        messages = list(task_backends["default"].check())
        assert [m.id for m in messages] == ["django_workflows.tasks.E001"]
