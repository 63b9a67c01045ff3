"""Lease renewal: a running instance renews its lease every heartbeat interval (a third of the
lease duration unless set), so a step longer than the lease never runs twice at once."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import override_settings

import django_workflows as wf
from django_workflows import clock
from django_workflows.models import WorkflowInstance
from django_workflows.worker import Worker
from tests.helpers import claim_ids, wait_until, worker_thread

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_heartbeat_is_a_third_of_the_workers_own_lease_duration():
    assert Worker(lease_duration="1500ms").heartbeat_interval == timedelta(milliseconds=500)
    assert Worker(lease_duration="90s").heartbeat_interval == timedelta(seconds=30)
    with override_settings(DJANGO_WORKFLOWS={"WORKER": {"LEASE_DURATION": "6s"}}):
        assert Worker().heartbeat_interval == timedelta(seconds=2)
        assert Worker(lease_duration="3s").heartbeat_interval == timedelta(seconds=1)
    with override_settings(DJANGO_WORKFLOWS={"WORKER": {"HEARTBEAT_INTERVAL": "4s"}}):
        assert Worker().heartbeat_interval == timedelta(seconds=4)
        # A lease given to the worker (runworkflows --lease-duration) replaces the setting.
        assert Worker(lease_duration="1m").heartbeat_interval == timedelta(seconds=20)


@pytest.mark.parametrize("heartbeat", ["30s", "0s"])
def test_a_heartbeat_of_zero_or_as_long_as_the_lease_is_refused(heartbeat):
    with override_settings(DJANGO_WORKFLOWS={"WORKER": {"HEARTBEAT_INTERVAL": heartbeat}}):
        with pytest.raises(ValueError, match="(?i)HEARTBEAT_INTERVAL.*shorter than.*LEASE"):
            Worker()


def test_a_step_longer_than_the_lease_keeps_its_lease_and_runs_once(define):
    attempts = []
    release = threading.Event()

    @define("slow-report")
    def report(ctx, input):
        def render(step):
            attempts.append(step.attempt)
            release.wait(10)
            return "rendered"

        return ctx.step("render", render)

    wf.start("slow-report", None, id="slow")
    with worker_thread(concurrency=2, poll_interval="100ms", lease_duration="1500ms"):
        assert wait_until(lambda: attempts, 10)
        time.sleep(3.5)  # more than twice the lease: only renewals keep it
        release.set()
        assert wait_until(lambda: wf.get_status("slow").status == "completed", 10)
    assert attempts == [1]
    assert WorkflowInstance.objects.get(pk="slow").runs == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--concurrency", "0"], "concurrency must be a positive integer"),
        (["--lease-duration", "3s", "--workflows", "no-such-workflow"], "no-such-workflow"),
    ],
)
def test_runworkflows_names_a_bad_option_without_a_traceback(args, message):
    with pytest.raises(CommandError, match=message):
        call_command("runworkflows", *args)


def test_runworkflows_refuses_a_lease_setting_its_heartbeat_setting_outlasts():
    settings = {"WORKER": {"HEARTBEAT_INTERVAL": "10s", "LEASE_DURATION": "5s"}}
    with override_settings(DJANGO_WORKFLOWS=settings):
        with pytest.raises(CommandError, match="HEARTBEAT_INTERVAL"):
            call_command("runworkflows", "--once")


def stubborn_workflow(define, attempts, release):
    """A workflow whose first attempt of its one step ignores step.cancelled until `release`."""

    @define("stubborn")
    def stubborn(ctx, input):
        def work(step):
            attempts.append(step.attempt)
            if step.attempt == 1:
                release.wait(20)  # never looks at step.cancelled
            return f"attempt {step.attempt}"

        return ctx.step("work", work)


def test_stop_leaves_an_instance_still_inside_a_step_to_its_lease(define):
    # Its step may still be running (the process goes on, as a program that embeds the worker
    # does): handing it back would run the step twice at once. It keeps its lease, no longer
    # renewed, and runs again only once that lease expires, as after a crash.
    attempts: list[int] = []
    release = threading.Event()
    stubborn_workflow(define, attempts, release)
    wf.start("stubborn", None, id="stubborn")
    try:
        options = {"poll_interval": "100ms", "shutdown_timeout": "200ms", "lease_duration": "3s"}
        with worker_thread(**options) as worker:
            assert wait_until(lambda: attempts, 10)
        assert worker.left_behind == ["stubborn"]
        row = WorkflowInstance.objects.get(pk="stubborn")
        assert row.status == "running" and row.lease_owner == worker.id
        assert claim_ids(["stubborn"], limit=1) == []  # still leased
        time.sleep(1.5)  # more than a heartbeat: nothing renews it any more
        assert WorkflowInstance.objects.get(pk="stubborn").lease_until == row.lease_until
        assert wait_until(lambda: row.lease_until < clock.now(), 10)
        assert wf.drain() == 1  # taken over: attempt 2, attempt 1 counted as stopped
    finally:
        release.set()  # the first attempt ends late: its lease is gone, so it writes nothing
    time.sleep(0.5)
    status = wf.get_status("stubborn")
    assert (status.status, status.output, attempts) == ("completed", "attempt 2", [1, 2])


def test_a_step_that_ends_after_stop_within_its_lease_keeps_its_result(define):
    attempts: list[int] = []
    release = threading.Event()
    stubborn_workflow(define, attempts, release)
    wf.start("stubborn", None, id="stubborn")
    options = {"poll_interval": "100ms", "shutdown_timeout": "200ms", "lease_duration": "30s"}
    with worker_thread(**options) as worker:
        assert wait_until(lambda: attempts, 10)
    assert worker.left_behind == ["stubborn"]
    release.set()  # the step ends while its lease holds: the execution writes its outcome
    assert wait_until(lambda: wf.get_status("stubborn").status == "completed", 10)
    assert (wf.get_status("stubborn").output, attempts) == ("attempt 1", [1])
    assert wf.drain() == 0


def test_runworkflows_refuses_tables_behind_the_code():
    # Roll the app's last migration back, as a deploy that forgot `migrate` leaves it.
    executor = MigrationExecutor(connection)
    leaf = next(k for k in executor.loader.graph.leaf_nodes() if k[0] == "django_workflows")
    # Its parent in the app (it may also depend on another app's migration, contenttypes').
    previous = [p.key for p in executor.loader.graph.node_map[leaf].parents if p.key[0] == leaf[0]]
    target = [previous[0]] if previous else [("django_workflows", None)]
    executor.migrate(target)
    try:
        with pytest.raises(CommandError, match=f"not applied \\({leaf[1]}\\).*migrate"):
            call_command("runworkflows", "--once")
    finally:
        MigrationExecutor(connection).migrate([leaf])
