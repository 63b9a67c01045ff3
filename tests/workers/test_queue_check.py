"""System check W003: a queue of a registered workflow or of an unfinished instance that no
worker seen in the last day lists, known from the registry of worker processes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import checks
from django.db import connection

import django_workflows as wf
from django_workflows.checks import check_queues
from tests.workers.helpers import register

pytestmark = pytest.mark.django_db


def warnings() -> list[checks.CheckMessage]:
    return [
        m
        for m in checks.run_checks(tags=[checks.Tags.database], databases=[connection.alias])
        if m.id == "django_workflows.W003"
    ]


def test_no_worker_seen_says_nothing(workflow_clock):
    wf.start("ops-quick", {}, id="g-1", queue="gpu")
    assert warnings() == []


def test_an_unfinished_instance_in_a_queue_no_worker_lists_warns(workflow_clock):
    wf.start("ops-quick", {}, id="g-1", queue="gpu")
    register("cpu", queues=["default"])
    [warning] = warnings()
    assert warning.level == checks.WARNING and warning.obj == "gpu"
    assert "Queue 'gpu' (of unfinished instances) is listed by no worker seen in the last day" in (
        warning.msg
    )
    assert "WorkerProcess rows" in warning.msg and "listing only 'default'" in warning.msg
    assert "runworkflows --queue gpu" in warning.hint


def test_a_registered_workflows_queue_no_worker_lists_warns(workflow_clock, define):
    @define("check-gpu-job", queue="render")
    def job(ctx, input):
        return None

    register("cpu", queues=["default"])
    [warning] = warnings()
    assert warning.obj == "render" and "(of workflow 'check-gpu-job')" in warning.msg


def test_a_worker_of_the_queue_or_of_every_queue_clears_it(workflow_clock):
    wf.start("ops-quick", {}, id="g-1", queue="gpu")
    register("cpu", queues=["default"])
    register("gpu", queues=["gpu"])
    assert warnings() == []
    register("gpu", queues=["other"])
    assert [w.obj for w in warnings()] == ["gpu"]
    register("any", queues=[])
    assert warnings() == []


def test_a_worker_last_seen_more_than_a_day_ago_no_longer_counts(workflow_clock):
    wf.start("ops-quick", {}, id="g-1", queue="gpu")
    register("cpu", queues=["default"])
    register("gpu", queues=["gpu"], seen=workflow_clock.now() - timedelta(days=1, seconds=1))
    assert [w.obj for w in warnings()] == ["gpu"]


def test_finished_instances_do_not_count(workflow_clock):
    wf.start("ops-quick", {}, id="g-1", queue="gpu")
    wf.drain()
    register("cpu", queues=["default"])
    assert warnings() == []


def test_it_runs_only_for_the_workflows_database(workflow_clock):
    wf.start("ops-quick", {}, id="g-1", queue="gpu")
    register("cpu", queues=["default"])
    assert check_queues(databases=["elsewhere"]) == []
    # Without a database asked for (plain `manage.py check`), as Django's own database checks.
    assert check_queues() == []
    assert [m.id for m in checks.run_checks() if m.id == "django_workflows.W003"] == []
    assert len(check_queues(databases=[connection.alias])) == 1
