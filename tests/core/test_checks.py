"""System check E001: a DJANGO_WORKFLOWS setting that cannot work, named by `manage.py check`
before anything runs."""

from __future__ import annotations

import pytest
from django.core.checks import run_checks

pytestmark = pytest.mark.django_db  # some checks read the database's settings


def e001(settings, value) -> list[str]:
    settings.DJANGO_WORKFLOWS = value
    return [m.msg for m in run_checks() if m.id == "django_workflows.E001"]


class NoNow:
    pass


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ({"WORKERS": {}}, "unknown keys: WORKERS"),
        ({"WORKER": {"POLL_INTERVAL": "soon"}}, "POLL_INTERVAL"),
        ({"WORKER": {"POLL_INTERVAL": "0s"}}, "POLL_INTERVAL"),
        ({"WORKER": {"POLL_INTERVAL": "5ms"}}, "POLL_INTERVAL"),
        ({"WORKER": {"HEARTBEAT_INTERVAL": "40s"}}, "HEARTBEAT_INTERVAL"),
        ({"RETRY": {"attempts": 0}}, "RETRY"),
        ({"RETRY": {"tries": 3}}, "tries"),
        ({"RETRY": "often"}, "RETRY"),
        ({"CLOCK": "tests.no_such_module.Clock"}, "CLOCK"),
        ({"CLOCK": NoNow()}, "now()"),
    ],
)
def test_a_setting_that_cannot_work_is_e001_naming_it(settings, value, named):
    [message] = e001(settings, value)
    assert named in message


def test_a_setting_that_works_has_no_e001(settings):
    value = {
        "WORKER": {"LEASE_DURATION": "1m", "HEARTBEAT_INTERVAL": "10s"},
        "RETRY": {"attempts": 5, "delay": "2s"},
        "CLOCK": "django_workflows.clock.SystemClock",
    }
    assert e001(settings, value) == []
