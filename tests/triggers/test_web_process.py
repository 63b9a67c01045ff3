"""A process that runs no worker (a web process) starts the workflows its saves map: the
receivers are connected when its app registry is ready."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

import django_workflows as wf
from tests.procapp.models import Signup

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import django
django.setup()
from tests.procapp.models import Signup
Signup.objects.create(email="cat@example.com")
print("saved")
"""


def test_a_process_that_runs_no_worker_starts_the_mapped_workflow():
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DB_NAME": connection.settings_dict["NAME"],  # the test database
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "saved"

    signup = Signup.objects.get()
    status = wf.get_status(f"welcome-{signup.pk}")
    assert status is not None
    assert (status.workflow, status.status, status.input) == (
        "welcome",
        "pending",
        {"email": "cat@example.com"},
    )
    wf.drain()
    assert wf.result(f"welcome-{signup.pk}") == "welcome cat@example.com"
