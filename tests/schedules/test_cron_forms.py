"""The forms a cron expression takes: 5 fields (minute hour day month weekday), 6 with the
seconds first (as the spec promises, and said so wherever a 6-field cron shows), and the
standard macros @yearly, @annually, @monthly, @weekly, @daily, @midnight and @hourly."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from django_workflows import Schedule, schedules
from django_workflows.schedules.cron import cron_reading
from tests.schedules.helpers import at

START = datetime(2026, 1, 1, 12, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("macro", "first", "second"),
    [
        ("@yearly", "2027-01-01T00:00", "2028-01-01T00:00"),
        ("@annually", "2027-01-01T00:00", "2028-01-01T00:00"),
        ("@monthly", "2026-02-01T00:00", "2026-03-01T00:00"),
        ("@weekly", "2026-01-04T00:00", "2026-01-11T00:00"),
        ("@daily", "2026-01-02T00:00", "2026-01-03T00:00"),
        ("@midnight", "2026-01-02T00:00", "2026-01-03T00:00"),
        ("@hourly", "2026-01-01T13:00", "2026-01-01T14:00"),
    ],
)
def test_the_standard_macros_are_accepted(macro, first, second):
    assert schedules.preview({"cron": macro}, start=START, count=2) == [at(first), at(second)]
    assert Schedule("by-macro", cron=macro).cron == macro


def test_a_macro_keeps_its_time_zone():
    assert schedules.preview({"cron": "@daily", "tz": "Europe/Paris"}, start=START, count=1) == [
        at("2026-01-01T23:00")
    ]


def test_an_unknown_macro_names_the_known_ones():
    with pytest.raises(ValueError) as raised:
        schedules.preview({"cron": "@fortnightly"})
    assert "@daily" in str(raised.value)
    assert "@fortnightly" in str(raised.value)


def test_a_wrong_number_of_fields_names_both_forms_and_the_macros():
    with pytest.raises(ValueError) as raised:
        schedules.preview({"cron": "0 2 1 *"})
    message = str(raised.value)
    assert "minute hour day month weekday" in message
    assert "second minute hour day month weekday" in message
    assert "@monthly" in message


def test_a_six_field_cron_reads_seconds_first():
    # "0 2 1 * * *" is second 0 of minute 2 of hour 1, every day: not 02:00 on the 1st.
    assert schedules.preview({"cron": "0 2 1 * * *"}, start=START, count=2) == [
        at("2026-01-02T01:02"),
        at("2026-01-03T01:02"),
    ]
    assert cron_reading("0 2 1 * * *") == (
        "second 0, minute 2, hour 1, day *, month *, weekday * (6 fields: seconds first)"
    )
    assert cron_reading("0 2 1 * *") == "minute 0, hour 2, day 1, month *, weekday *"
    assert cron_reading("@monthly") == "@monthly: minute 0, hour 0, day 1, month *, weekday *"


def test_a_bad_six_field_cron_says_it_was_read_seconds_first():
    with pytest.raises(ValueError) as raised:
        schedules.preview({"cron": "0 2 1 * * 8"})
    assert "second minute hour day month weekday" in str(raised.value)


@pytest.fixture
def six_fields(db, workflow_clock):
    return schedules.upsert("at-one-oh-two", workflow="flaky", cron="0 2 1 * * *")


def test_the_admin_shows_how_a_six_field_cron_is_read(admin_client, six_fields):
    listing = admin_client.get(reverse("admin:django_workflows_workflowschedule_changelist"))
    assert "seconds first" in listing.content.decode()
    detail = admin_client.get(
        reverse("admin:django_workflows_workflowschedule_change", args=["at-one-oh-two"])
    )
    assert "second 0, minute 2, hour 1" in detail.content.decode()
