"""The poll interval: below 10 ms an idle worker would claim hundreds of times a second, so
Worker(), runworkflows and the setting refuse it, naming it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from django_workflows.worker import Worker

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("poll", ["0s", 0, "9ms", timedelta(microseconds=9999)])
def test_a_worker_refuses_a_poll_interval_under_ten_milliseconds(poll):
    with pytest.raises(ValueError, match="poll_interval.*10ms"):
        Worker(poll_interval=poll)


def test_a_worker_takes_a_poll_interval_of_ten_milliseconds():
    assert Worker(poll_interval="10ms").poll_interval == timedelta(milliseconds=10)


def test_a_worker_refuses_a_poll_interval_setting_under_ten_milliseconds():
    with override_settings(DJANGO_WORKFLOWS={"WORKER": {"POLL_INTERVAL": "0s"}}):
        with pytest.raises(ValueError, match=r"WORKER\['POLL_INTERVAL'\].*10ms"):
            Worker()


@pytest.mark.parametrize("once", [[], ["--once"]])
def test_runworkflows_refuses_a_poll_interval_under_ten_milliseconds(once):
    with pytest.raises(CommandError, match="poll_interval.*10ms"):
        call_command("runworkflows", "--poll-interval", "0s", "--no-reload", *once)


def test_runworkflows_refuses_a_poll_interval_setting_under_ten_milliseconds():
    with override_settings(DJANGO_WORKFLOWS={"WORKER": {"POLL_INTERVAL": "1ms"}}):
        with pytest.raises(CommandError, match=r"WORKER\['POLL_INTERVAL'\]"):
            call_command("runworkflows", "--once")
