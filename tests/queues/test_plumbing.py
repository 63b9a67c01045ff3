"""Where an instance's queue comes from: `@workflow(queue=...)`, `start(queue=...)`, a child's
from `ctx.start_child(queue=)`, its workflow or its parent; kept by forks and exports; shown in
InstanceStatus.queue and filtered by list_instances(queue=). Bad names are refused before
anything is written, the caller's transaction left usable."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction

import django_workflows as wf
from django_workflows.client.exports import export_instance, read_export
from django_workflows.models import WorkflowInstance
from django_workflows.worker import Worker

pytestmark = pytest.mark.django_db(transaction=True)


def queue_of(id: str) -> str:
    return WorkflowInstance.objects.get(pk=id).queue


def test_an_instance_waits_in_the_default_queue_unless_its_workflow_names_one(define):
    @define("plain-q")
    def plain(ctx, input):
        return 1

    @define("gpu-q", queue="gpu")
    def gpu(ctx, input):
        return 2

    wf.start("plain-q", id="p1")
    wf.start("gpu-q", id="g1")
    assert queue_of("p1") == "default" and queue_of("g1") == "gpu"
    assert wf.get_status("p1").queue == "default"
    assert wf.get_status("g1").queue == "gpu"
    assert gpu.queue == "gpu" and plain.queue == "default"


def test_start_names_another_queue_than_its_workflows(define):
    @define("gpu-q", queue="gpu")
    def gpu(ctx, input):
        return 2

    wf.start("gpu-q", id="slow-1", queue="slow-api")
    wf.start("gpu-q", id="gpu-1")
    assert wf.get_status("slow-1").queue == "slow-api"
    assert [s.id for s in wf.list_instances(queue="slow-api")] == ["slow-1"]
    assert [s.id for s in wf.list_instances(queue="gpu")] == ["gpu-1"]
    assert wf.list_instances(queue="default") == []
    assert [s.queue for s in wf.list_instances(workflow="gpu-q")] == ["slow-api", "gpu"]


def test_a_repeated_start_keeps_the_queue_of_the_instance_it_finds(define):
    @define("again-q")
    def again(ctx, input):
        return 1

    assert wf.start("again-q", id="a1", queue="first").created
    found = wf.start("again-q", id="a1", queue="second")
    assert not found.created
    assert queue_of("a1") == "first"


def test_a_child_goes_to_the_queue_given_else_its_workflows_else_its_parents(define):
    @define("child-plain")
    def child_plain(ctx, input):
        return "plain"

    @define("child-gpu", queue="gpu")
    def child_gpu(ctx, input):
        return "gpu"

    @define("parent-q")
    def parent(ctx, input):
        ctx.start_child("child-plain", id=f"{ctx.instance_id}-inherits")
        ctx.start_child("child-gpu", id=f"{ctx.instance_id}-own")
        ctx.start_child("child-gpu", id=f"{ctx.instance_id}-given", queue="slow-api")
        ctx.start_child("child-plain", id=f"{ctx.instance_id}-given-plain", queue="batch")
        return "started"

    wf.start("parent-q", id="par", queue="reports")
    Worker(queues=["reports"]).drain()
    assert wf.get_status("par").status == "completed"
    assert queue_of("par-inherits") == "reports"  # the parent's
    assert queue_of("par-own") == "gpu"  # its workflow's
    assert queue_of("par-given") == "slow-api"
    assert queue_of("par-given-plain") == "batch"


def test_a_bad_queue_given_to_start_child_fails_the_parent_naming_it(define):
    @define("child-any")
    def child(ctx, input):
        return 1

    @define("parent-bad")
    def parent(ctx, input):
        ctx.start_child("child-any", id="kid", queue="no spaces")

    wf.start("parent-bad", id="pb")
    wf.drain()
    status = wf.get_status("pb")
    assert status.status == "failed"
    assert "queue" in status.error["message"]
    assert not WorkflowInstance.objects.filter(pk="kid").exists()


def test_a_fork_and_an_export_keep_the_queue(define):
    @define("forked-q", queue="gpu")
    def forked(ctx, input):
        ctx.step("a", lambda step: 1)
        return ctx.step("b", lambda step: 2)

    wf.start("forked-q", id="orig", queue="slow-api")
    Worker(queues=["slow-api"]).drain()
    assert wf.get_status("orig").status == "completed"
    copy = wf.fork("orig", from_step="b")
    assert queue_of(copy.id) == "slow-api"
    document = export_instance("orig")
    assert document["queue"] == "slow-api"
    instance, _ = read_export(document)
    assert instance.queue == "slow-api"
    del document["queue"]  # an export made before queues
    instance, _ = read_export(document)
    assert instance.queue == "default"


BAD_QUEUES = [
    (5, TypeError, "queue must be a string, not int"),
    ("", ValueError, "must be 1 to 100 letters"),
    ("two words", ValueError, "must be 1 to 100 letters"),
    ("gpu\n", ValueError, "must be 1 to 100 letters"),
    ("x" * 101, ValueError, "must be 1 to 100 letters"),
]


@pytest.mark.parametrize(("queue", "error", "message"), BAD_QUEUES)
def test_a_bad_queue_on_start_is_refused_before_anything_is_written(define, queue, error, message):
    @define("refuses-q")
    def refuses(ctx, input):
        return 1

    with transaction.atomic():
        with pytest.raises(error, match=message):
            wf.start("refuses-q", id="refused", queue=queue)
        wf.start("refuses-q", id="after")  # the transaction still works
    assert not WorkflowInstance.objects.filter(pk="refused").exists()
    assert WorkflowInstance.objects.filter(pk="after").exists()


@pytest.mark.parametrize(("queue", "error", "message"), BAD_QUEUES)
def test_a_bad_queue_on_the_decorator_is_refused_naming_the_workflow(define, queue, error, message):
    with pytest.raises(error, match="Workflow 'bad-decorated': queue"):
        define("bad-decorated", queue=queue)(lambda ctx, input: None)


@pytest.mark.parametrize(("queue", "error", "message"), BAD_QUEUES)
def test_a_bad_queue_on_list_instances_is_refused_before_any_query(queue, error, message):
    with transaction.atomic():
        with pytest.raises(error, match=message):
            wf.list_instances(queue=queue)
        assert wf.list_instances() == []


def test_a_worker_refuses_bad_queues():
    with pytest.raises(TypeError, match="queues must be a list of queue names, not str"):
        Worker(queues="gpu")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="A worker's queue 'two words'"):
        Worker(queues=["gpu", "two words"])
    with pytest.raises(TypeError, match="A worker's queue must be a string, not int"):
        Worker(queues=[1])  # type: ignore[list-item]
    assert Worker(queues=[]).queues is None  # every queue, as WorkerProcess.queues says it


def test_runworkflows_refuses_a_bad_queue_name():
    with pytest.raises(CommandError, match="A worker's queue 'two words'"):
        call_command("runworkflows", "--once", "--queue", "two words", stdout=io.StringIO())
