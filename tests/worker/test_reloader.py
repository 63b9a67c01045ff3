"""runworkflows under the autoreloader (on under DEBUG), as real processes: bad options stop it
before the reloader starts, and SIGTERM or SIGINT to the reloader's process stop its worker as
cleanly as without it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows.models import WorkerProcess, WorkflowInstance
from tests.procapp.models import StepRun
from tests.worker.test_processes import ROOT, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def environment(settings_directory: Path) -> dict[str, str]:
    """The test settings with DEBUG on (so the reloader is on), on the test database."""
    (settings_directory / "debug_settings.py").write_text(
        "from tests.settings import *  # noqa: F403\n\nDEBUG = True\n"
    )
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "debug_settings",
        "DB_NAME": connection.settings_dict["NAME"],  # the test database
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(settings_directory)]),
    }


def spawn_under_debug(settings_directory: Path, *args: str, **popen: Any) -> subprocess.Popen:
    """A runworkflows process under DEBUG (the reloader's parent, which starts the child that
    runs the worker); its output and error output piped together."""
    return subprocess.Popen(
        [sys.executable, "-m", "django", "runworkflows", *args],
        cwd=ROOT,
        env=environment(settings_directory),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **popen,
    )


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (("--concurrency", "0"), "concurrency must be a positive integer, not 0."),
        (("--workflow", "nope"), "nope"),
    ],
)
def test_a_bad_option_under_debug_exits_1_before_the_reloader_starts(tmp_path, option, message):
    worker = spawn_under_debug(tmp_path, *option, start_new_session=True)
    try:
        output, _ = worker.communicate(timeout=60)
    finally:
        if worker.poll() is None:  # it waits: end the reloader's child too
            os.killpg(worker.pid, signal.SIGKILL)
            worker.communicate()
    assert worker.returncode == 1, output
    assert "CommandError: " in output and message in output
    assert "Traceback" not in output
    assert "Watching for file changes" not in output  # no reloader, no child


def stop_in_the_first_step(tmp_path: Path, send: Any) -> str:
    """Start an instance, run a worker under DEBUG, `send(parent)` once its first step runs; the
    output of the worker (which exited 0)."""
    wf.start("process-order", {"seconds": 60}, id="reloaded-1")
    worker = spawn_under_debug(
        tmp_path,
        "--poll-interval",
        "200ms",
        "--lease-duration",
        "60s",
        "--shutdown-timeout",
        "10s",
        start_new_session=True,  # a process group of its own, as a terminal's job
    )
    try:
        wait_for(
            lambda: StepRun.objects.filter(instance_id="reloaded-1").exists(),
            timeout=60,
            what="the first step",
        )
        assert WorkerProcess.objects.count() == 1
        send(worker)
        output, _ = worker.communicate(timeout=30)
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            print(worker.communicate()[0])  # what it said before it hung, for the failure
    assert worker.returncode == 0, output
    return output


def assert_stopped_cleanly(output: str) -> None:
    assert "handed back" in output and "stopped." in output, output
    row = WorkflowInstance.objects.get(pk="reloaded-1")
    assert row.lease_token is None and row.status == "suspended"  # claimable again now
    assert not WorkerProcess.objects.exists()  # its registry row deleted: a clean exit


def test_sigterm_to_the_reloaders_process_stops_the_worker_cleanly(tmp_path):
    # What `make demo`'s stop, honcho, docker and systemd send: to the process they started.
    output = stop_in_the_first_step(tmp_path, lambda worker: worker.send_signal(signal.SIGTERM))
    assert_stopped_cleanly(output)


def test_ctrl_c_under_the_reloader_stops_the_worker_cleanly(tmp_path):
    # A terminal's Ctrl-C: SIGINT to the whole process group, the reloader's child included,
    # which also gets it from its parent; one stop, not the second signal's exit at once.
    output = stop_in_the_first_step(tmp_path, lambda worker: os.killpg(worker.pid, signal.SIGINT))
    assert_stopped_cleanly(output)


def test_a_changed_file_restarts_the_worker_after_handing_its_instances_back(tmp_path):
    def change_then_stop(worker: subprocess.Popen) -> None:
        first = StepRun.objects.get(instance_id="reloaded-1")
        settings_file = tmp_path / "debug_settings.py"  # a module the reloader watches

        def changed_and_run_again() -> bool:
            # Changed again until seen: the reloader's first look at the files may come after
            # the step started.
            later = settings_file.stat().st_mtime + 1
            os.utime(settings_file, (later, later))
            time.sleep(1)
            return StepRun.objects.exclude(pid=first.pid).exists()

        # The new child claims the instance again: its first step runs a second time.
        wait_for(changed_and_run_again, timeout=60, what="the step to run in a new child")
        worker.send_signal(signal.SIGTERM)

    output = stop_in_the_first_step(tmp_path, change_then_stop)
    assert "debug_settings.py changed: stopping the worker to reload." in output
    assert output.count("Watching for file changes") >= 2, output
    assert_stopped_cleanly(output)


def test_a_second_sigterm_under_the_reloader_ends_both_processes_at_once(tmp_path):
    wf.start("process-order", {"seconds": 60, "stoppable": False}, id="stuck-1")
    worker = spawn_under_debug(tmp_path, "--shutdown-timeout", "60s", start_new_session=True)
    try:
        wait_for(lambda: StepRun.objects.filter(instance_id="stuck-1").exists(), timeout=60)
        child = StepRun.objects.get(instance_id="stuck-1").pid
        worker.send_signal(signal.SIGTERM)  # the step never stops: the worker waits for it
        time.sleep(1)
        assert worker.poll() is None
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=10)
        assert worker.returncode == 1
        wait_for(lambda: not alive(child), timeout=10, what="the child to end")
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.communicate()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a killed child whose parent exited is a zombie until init reaps it
        return not Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except FileNotFoundError:
        return False
