"""A changed DJANGO_WORKFLOWS setting replaces what was read from the old one: the clock and the
default retry policy, each cached by its own module, are read again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django_workflows import clock
from django_workflows.engine import retries


class FixedClock:
    def now(self) -> datetime:
        return datetime(2030, 5, 1, tzinfo=UTC)


def test_a_changed_clock_setting_replaces_the_clock_already_read(settings):
    settings.DJANGO_WORKFLOWS = {}
    assert isinstance(clock.get_clock(), clock.SystemClock)
    settings.DJANGO_WORKFLOWS = {"CLOCK": FixedClock()}
    assert clock.now() == datetime(2030, 5, 1, tzinfo=UTC)


def test_a_changed_retry_setting_replaces_the_default_retry_already_read(settings):
    settings.DJANGO_WORKFLOWS = {}
    assert retries.default_retry().attempts == 3
    settings.DJANGO_WORKFLOWS = {"RETRY": {"attempts": 5, "delay": "2s"}}
    policy = retries.default_retry()
    assert (policy.attempts, policy.delay) == (5, timedelta(seconds=2))
