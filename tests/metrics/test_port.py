"""`runworkflows --metrics-port`: a real worker process serves its counters at /metrics in
Prometheus' text format; a bad port, a port in use, METRICS off or the extra missing stop the
command with exit 1 and the fix."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from prometheus_client.parser import text_string_to_metric_families

import django_workflows as wf
from django_workflows.models import WorkflowInstance
from tests.worker.test_processes import ROOT

pytestmark = pytest.mark.django_db(transaction=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def runworkflows(*args: str, metrics: bool = True, **popen: object) -> subprocess.Popen:
    """A runworkflows process on the test database, with METRICS on or off."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.metrics.settings" if metrics else "tests.settings",
        "DB_NAME": connection.settings_dict["NAME"],
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "django", "runworkflows", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **popen,  # type: ignore[arg-type]
    )


def refused(*args: str, metrics: bool = True) -> str:
    """The output of a runworkflows that must exit 1 at once."""
    process = runworkflows(*args, metrics=metrics)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 1, output
    return output


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_a_worker_serves_its_counters_on_its_metrics_port():
    port = free_port()
    for n in range(3):
        wf.start("process-order", {"seconds": 0.01}, id=f"metrics-port-{n}")
    worker = runworkflows(
        "--metrics-port", str(port), "--metrics-address", "127.0.0.1", "--poll-interval", "100ms"
    )
    try:
        deadline = time.monotonic() + 60
        while WorkflowInstance.objects.filter(status="completed").count() < 3:
            assert time.monotonic() < deadline, "the worker did not complete the orders"
            assert worker.poll() is None, worker.communicate()[0]
            time.sleep(0.1)
        found = scrape(port)
    finally:
        worker.send_signal(signal.SIGTERM)
        output, _ = worker.communicate(timeout=30)
    assert worker.returncode == 0, output
    attempts = "django_workflows_step_attempts_total"
    for step in ("charge", "reserve", "ship"):
        labels = (("outcome", "completed"), ("step", step), ("workflow", "process-order"))
        assert found[(attempts, labels)] == 3
        timing = (("step", step), ("workflow", "process-order"))
        assert found[("django_workflows_step_seconds_count", timing)] == 3
        assert found[("django_workflows_step_seconds_sum", timing)] >= 3 * 0.01
    executions = (("outcome", "completed"), ("workflow", "process-order"))
    assert found[("django_workflows_executions_total", executions)] == 3
    assert found[("django_workflows_claim_seconds_count", ())] >= 1
    assert f"metrics at http://127.0.0.1:{port}/metrics" in output


def test_metrics_off_is_refused_with_the_setting_to_change():
    output = refused("--metrics-port", str(free_port()), metrics=False)
    assert "DJANGO_WORKFLOWS['METRICS'] is True" in output


@pytest.mark.parametrize("port", ["0", "70000", "http", "-1"])
def test_a_bad_port_is_refused(port):
    output = refused("--metrics-port", port)
    assert f"--metrics-port must be a TCP port from 1 to 65535, not {port!r}" in output


def test_a_bad_address_is_refused():
    output = refused("--metrics-port", str(free_port()), "--metrics-address", "every")
    assert "--metrics-address must be an IP address" in output


def test_a_port_in_use_is_refused():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        output = refused("--metrics-port", str(port), "--metrics-address", "127.0.0.1")
    assert f"Cannot serve the metrics on 127.0.0.1:{port}" in output
    assert "choose a free --metrics-port" in output


def test_the_extra_missing_is_refused_with_how_to_install_it(settings, monkeypatch):
    settings.DJANGO_WORKFLOWS = {"METRICS": True}
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # as if not installed
    with pytest.raises(CommandError, match=r"pip install \"django-durable-workflows\[prometheus\]"):
        call_command("runworkflows", "--metrics-port", "9100", "--once", skip_checks=True)


def test_under_the_reloader_the_process_that_runs_the_worker_serves_the_port(tmp_path):
    """DEBUG turns the reloader on: its first process checks the options and restarts a child,
    which runs the worker and alone opens the port (two processes binding it would fail)."""
    (tmp_path / "debug_metrics_settings.py").write_text(
        "from tests.metrics.settings import *  # noqa: F403\n\nDEBUG = True\n"
    )
    port = free_port()
    wf.start("process-order", {"seconds": 0.01}, id="metrics-reloaded")
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "django",
            "runworkflows",
            "--metrics-port",
            str(port),
            "--metrics-address",
            "127.0.0.1",
            "--poll-interval",
            "100ms",
        ],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "debug_metrics_settings",
            "DB_NAME": connection.settings_dict["NAME"],
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]),
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not WorkflowInstance.objects.filter(status="completed").exists():
            assert time.monotonic() < deadline, "the worker did not complete the order"
            assert worker.poll() is None, worker.communicate()[0]
            time.sleep(0.1)
        found = scrape(port)
    finally:
        worker.send_signal(signal.SIGTERM)
        output, _ = worker.communicate(timeout=30)
    assert worker.returncode == 0, output
    executions = (("outcome", "completed"), ("workflow", "process-order"))
    assert found[("django_workflows_executions_total", executions)] == 1
    assert output.count(f"metrics at http://127.0.0.1:{port}/metrics") == 1
