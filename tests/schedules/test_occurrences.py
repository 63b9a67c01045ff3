"""When schedules' occurrences fall: cron, every and rrule, time zones, DST, bounds, bad input."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter
from dateutil.rrule import rrulestr

from django_workflows.schedules import timing as occ
from django_workflows.schedules.ids import occurrence_id

NEW_YORK = "America/New_York"


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def reference_cron(cron: str, tz: str, after: datetime, count: int) -> list[datetime]:
    """Occurrences by brute force: every wall-clock match from a day earlier, read with fold=0,
    keeping each one later than all before it."""
    zone = ZoneInfo(tz)
    start = (after - timedelta(days=1)).astimezone(zone).replace(tzinfo=None)
    matches = croniter(cron, start, second_at_beginning=len(cron.split()) == 6)
    found: list[datetime] = []
    latest = None
    while len(found) < count:
        at = matches.get_next(datetime).replace(tzinfo=zone).astimezone(UTC)
        if latest is None or at > latest:
            latest = at
            if at > after:
                found.append(at)
    return found


# -- cron ----------------------------------------------------------------------------------------


def test_a_five_field_cron_in_utc():
    timing = occ.timing(cron="30 6 * * 1-5")
    assert occ.upcoming(timing, utc(2026, 5, 1, 6, 30), 3) == [
        utc(2026, 5, 4, 6, 30),
        utc(2026, 5, 5, 6, 30),
        utc(2026, 5, 6, 6, 30),
    ]


def test_a_six_field_cron_takes_the_seconds_first():
    timing = occ.timing(cron="15 0 9 * * *")
    assert occ.upcoming(timing, utc(2026, 5, 1, 8), 2) == [
        utc(2026, 5, 1, 9, 0, 15),
        utc(2026, 5, 2, 9, 0, 15),
    ]


def test_next_after_is_strictly_after():
    timing = occ.timing(cron="0 * * * *")
    assert occ.next_after(timing, utc(2026, 5, 1, 9)) == utc(2026, 5, 1, 10)
    assert occ.next_after(timing, utc(2026, 5, 1, 9) - timedelta(microseconds=1)) == utc(
        2026, 5, 1, 9
    )


def test_a_cron_runs_at_wall_clock_time_in_its_zone():
    timing = occ.timing(cron="0 9 * * *", tz="Europe/Paris")
    # Paris is UTC+1 in winter and UTC+2 from 29 March 2026.
    assert occ.upcoming(timing, utc(2026, 3, 27), 3) == [
        utc(2026, 3, 27, 8),
        utc(2026, 3, 28, 8),
        utc(2026, 3, 29, 7),
    ]


def test_a_2am_cron_in_new_york_across_both_clock_changes_of_2026():
    timing = occ.timing(cron="0 2 * * *", tz=NEW_YORK)
    # 2026-03-08 02:00 does not exist: it runs as much later as the clocks jumped, 03:00 EDT.
    assert occ.upcoming(timing, utc(2026, 3, 6, 12), 3) == [
        utc(2026, 3, 7, 7),
        utc(2026, 3, 8, 7),
        utc(2026, 3, 9, 6),
    ]
    assert occ.upcoming(timing, utc(2026, 10, 30, 12), 3) == [
        utc(2026, 10, 31, 6),
        utc(2026, 11, 1, 7),
        utc(2026, 11, 2, 7),
    ]


def test_a_repeated_wall_clock_time_runs_once_the_first_time():
    timing = occ.timing(cron="30 1 * * *", tz=NEW_YORK)
    assert occ.upcoming(timing, utc(2026, 10, 31, 12), 2) == [
        utc(2026, 11, 1, 5, 30),
        utc(2026, 11, 2, 6, 30),
    ]
    # Asked during the repeated hour's second pass, 01:30 is already done for the day.
    assert occ.next_after(timing, utc(2026, 11, 1, 6, 10)) == utc(2026, 11, 2, 6, 30)


def test_an_hourly_cron_skips_the_second_pass_of_the_repeated_hour():
    timing = occ.timing(cron="0 * * * *", tz=NEW_YORK)
    assert occ.upcoming(timing, utc(2026, 11, 1, 3, 30), 4) == [
        utc(2026, 11, 1, 4),  # 00:00 EDT
        utc(2026, 11, 1, 5),  # 01:00 EDT
        utc(2026, 11, 1, 7),  # 02:00 EST; 01:00 EST (06:00 UTC) does not run again
        utc(2026, 11, 1, 8),
    ]
    assert occ.next_after(timing, utc(2026, 11, 1, 5)) == utc(2026, 11, 1, 7)
    assert occ.next_after(timing, utc(2026, 11, 1, 6, 30)) == utc(2026, 11, 1, 7)


def test_skipped_times_that_land_on_real_ones_run_once():
    timing = occ.timing(cron="*/15 * * * *", tz=NEW_YORK)
    # 02:00-02:45 do not exist on 2026-03-08: they run at 03:00-03:45 EDT, which are not repeated.
    expected = [utc(2026, 3, 8, 6, 45) + timedelta(minutes=15 * i) for i in range(6)]
    assert occ.upcoming(timing, utc(2026, 3, 8, 6, 40), 6) == expected
    assert occ.next_after(timing, utc(2026, 3, 8, 7, 10)) == utc(2026, 3, 8, 7, 15)
    assert occ.next_after(timing, utc(2026, 3, 8, 7, 50)) == utc(2026, 3, 8, 8)
    assert occ.between(timing, utc(2026, 3, 8, 6), utc(2026, 3, 8, 8), 100) == [
        utc(2026, 3, 8, 6, 15),
        utc(2026, 3, 8, 6, 30),
        *expected,
    ]


@pytest.mark.parametrize(
    "cron, tz",
    [
        ("*/15 * * * *", NEW_YORK),
        ("0 * * * *", NEW_YORK),
        ("30 2 * * *", NEW_YORK),
        ("*/20 1-3 * * *", NEW_YORK),
        ("0 */7 * * * *", NEW_YORK),
        ("*/10 * * * *", "Australia/Lord_Howe"),  # its clocks move by half an hour
        ("45 2 * * *", "Europe/London"),
    ],
)
def test_cron_occurrences_around_clock_changes_match_brute_force(cron, tz):
    timing = occ.timing(cron=cron, tz=tz)
    zone = ZoneInfo(tz)
    changes = [
        moment
        for moment in (utc(2026, 1, 1) + timedelta(hours=h) for h in range(365 * 24))
        if (moment - timedelta(hours=1)).astimezone(zone).utcoffset()
        != moment.astimezone(zone).utcoffset()
    ]
    assert len(changes) == 2
    for change in changes:
        for minutes in range(-150, 151, 7):
            after = change + timedelta(minutes=minutes, seconds=13)
            expected = reference_cron(cron, tz, after, 6)
            assert occ.upcoming(timing, after, 6) == expected, after
            assert occ.between(timing, after, expected[-1], 4) == expected[-4:], after


def test_occurrences_are_aware_utc_and_increasing():
    for timing in (
        occ.timing(cron="*/5 * * * *", tz=NEW_YORK),
        occ.timing(every="7m", start_at=datetime(2026, 3, 8, 1, tzinfo=ZoneInfo(NEW_YORK))),
        occ.timing(rrule="FREQ=HOURLY", tz=NEW_YORK, anchor=utc(2026, 3, 1)),
    ):
        found = occ.upcoming(timing, utc(2026, 3, 8, 5), 50)
        assert len(found) == 50
        assert all(at.tzinfo is UTC for at in found)
        assert found == sorted(set(found))


# -- every ---------------------------------------------------------------------------------------


def test_every_counts_from_start_at():
    timing = occ.timing(every="1h30m", start_at=utc(2026, 5, 1, 9, 10))
    assert occ.upcoming(timing, utc(2026, 1, 1), 3) == [
        utc(2026, 5, 1, 9, 10),
        utc(2026, 5, 1, 10, 40),
        utc(2026, 5, 1, 12, 10),
    ]
    assert occ.next_after(timing, utc(2026, 5, 1, 10, 40)) == utc(2026, 5, 1, 12, 10)


def test_every_without_start_at_counts_from_the_epoch():
    timing = occ.timing(every=timedelta(hours=7))
    # 2026-05-01T00:00Z is 493,776 hours after the epoch: 3 more than a multiple of 7.
    assert occ.next_after(timing, utc(2026, 5, 1)) == utc(2026, 5, 1, 4)
    assert occ.upcoming(timing, utc(2026, 5, 1, 4), 2) == [utc(2026, 5, 1, 11), utc(2026, 5, 1, 18)]


def test_every_counts_from_the_anchor_when_there_is_no_start_at():
    timing = occ.timing(every=3600, anchor=utc(2026, 5, 1, 9, 20))
    assert occ.upcoming(timing, utc(2026, 5, 1), 2) == [
        utc(2026, 5, 1, 9, 20),
        utc(2026, 5, 1, 10, 20),
    ]


def test_every_keeps_millisecond_precision_at_most():
    timing = occ.timing(every=timedelta(seconds=1, microseconds=500), start_at=utc(2026, 1, 1))
    found = occ.upcoming(timing, utc(2026, 1, 1), 3)
    assert found == [
        utc(2026, 1, 1, 0, 0, 1),
        datetime(2026, 1, 1, 0, 0, 2, 1000, tzinfo=UTC),
        datetime(2026, 1, 1, 0, 0, 3, 1000, tzinfo=UTC),
    ]
    assert occ.between(timing, utc(2026, 1, 1), found[-1], 10) == found


# -- rrule ---------------------------------------------------------------------------------------

EVERY_FOURTH_SATURDAY = "FREQ=WEEKLY;INTERVAL=4;BYDAY=SA;BYHOUR=9;BYMINUTE=0"


def test_an_rrule_in_paris_from_an_anchor():
    timing = occ.timing(rrule=EVERY_FOURTH_SATURDAY, tz="Europe/Paris", anchor=utc(2026, 3, 1, 12))
    # 09:00 in Paris: UTC+1 until 29 March, UTC+2 after.
    assert occ.upcoming(timing, utc(2026, 3, 1), 3) == [
        utc(2026, 3, 28, 8),
        utc(2026, 4, 25, 7),
        utc(2026, 5, 23, 7),
    ]


def test_an_rrule_takes_the_rrule_prefix_and_start_at_over_the_anchor():
    timing = occ.timing(
        rrule="RRULE:" + EVERY_FOURTH_SATURDAY,
        tz="Europe/Paris",
        start_at=utc(2026, 3, 8, 12),
        anchor=utc(2026, 3, 1, 12),
    )
    assert occ.next_after(timing, utc(2026, 1, 1)) == utc(2026, 4, 4, 7)


def test_an_rrule_far_from_its_start_matches_dateutil():
    anchor = utc(2025, 1, 1, 0, 0, 7)
    after = utc(2026, 5, 1, 12, 34, 56)
    for rule in (
        "FREQ=MINUTELY;INTERVAL=7",
        EVERY_FOURTH_SATURDAY,
        "FREQ=MONTHLY;BYMONTHDAY=-1;BYHOUR=6",
    ):
        timing = occ.timing(rrule=rule, anchor=anchor)
        began = time.perf_counter()
        found = occ.upcoming(timing, after, 5)
        assert time.perf_counter() - began < 0.1
        reference = rrulestr(rule, dtstart=anchor.replace(tzinfo=None))
        expected = [
            at.replace(tzinfo=UTC) for at in reference.xafter(after.replace(tzinfo=None), 5)
        ]
        assert found == expected


def test_an_rrule_count_and_utc_until_are_kept():
    anchor = utc(2026, 1, 5, 14)
    counted = occ.timing(rrule="FREQ=DAILY;COUNT=3", tz=NEW_YORK, anchor=anchor)
    assert occ.upcoming(counted, utc(2026, 1, 1), 10) == [utc(2026, 1, d, 14) for d in (5, 6, 7)]
    until = occ.timing(rrule="FREQ=DAILY;UNTIL=20260107T140000Z", tz=NEW_YORK, anchor=anchor)
    assert occ.upcoming(until, utc(2026, 1, 1), 10) == [utc(2026, 1, d, 14) for d in (5, 6, 7)]


def test_an_rrule_without_start_at_or_anchor_cannot_be_computed():
    timing = occ.timing(rrule="FREQ=DAILY")
    with pytest.raises(ValueError, match="start_at or an anchor"):
        occ.next_after(timing, utc(2026, 1, 1))


# -- start_at and end_at -------------------------------------------------------------------------


def test_no_occurrence_before_start_at_or_after_end_at():
    timing = occ.timing(cron="0 12 * * *", start_at=utc(2026, 5, 3, 12), end_at=utc(2026, 5, 5, 12))
    assert occ.upcoming(timing, utc(2026, 5, 1), 10) == [
        utc(2026, 5, 3, 12),
        utc(2026, 5, 4, 12),
        utc(2026, 5, 5, 12),
    ]
    assert occ.next_after(timing, utc(2026, 5, 5, 12)) is None
    assert occ.between(timing, utc(2026, 5, 1), utc(2026, 6, 1), 10) == [
        utc(2026, 5, 3, 12),
        utc(2026, 5, 4, 12),
        utc(2026, 5, 5, 12),
    ]


def test_every_stops_at_end_at():
    timing = occ.timing(every="1d", start_at=utc(2026, 5, 1), end_at=utc(2026, 5, 2, 23))
    assert occ.upcoming(timing, utc(2026, 1, 1), 5) == [utc(2026, 5, 1), utc(2026, 5, 2)]
    assert occ.next_after(timing, utc(2026, 5, 2)) is None
    assert occ.between(timing, utc(2026, 1, 1), utc(2027, 1, 1), 5) == [
        utc(2026, 5, 1),
        utc(2026, 5, 2),
    ]


# -- between -------------------------------------------------------------------------------------


def test_between_is_after_exclusive_and_until_inclusive():
    timing = occ.timing(cron="0 * * * *")
    assert occ.between(timing, utc(2026, 5, 1, 9), utc(2026, 5, 1, 12), 10) == [
        utc(2026, 5, 1, 10),
        utc(2026, 5, 1, 11),
        utc(2026, 5, 1, 12),
    ]
    assert occ.between(timing, utc(2026, 5, 1, 12), utc(2026, 5, 1, 12), 10) == []
    assert occ.between(timing, utc(2026, 5, 1, 9), utc(2026, 5, 1, 12), 0) == []


def test_between_keeps_the_latest_of_many_from_a_per_second_cron():
    timing = occ.timing(cron="* * * * * *")
    began = time.perf_counter()
    found = occ.between(timing, utc(2026, 5, 1), utc(2026, 5, 2), 3)
    assert time.perf_counter() - began < 1
    assert found == [utc(2026, 5, 1, 23, 59, 58), utc(2026, 5, 1, 23, 59, 59), utc(2026, 5, 2)]


def test_between_keeps_the_latest_of_a_sparse_cron():
    timing = occ.timing(cron="0 6 1 * *")
    found = occ.between(timing, utc(2020, 1, 1), utc(2026, 10, 15), 2)
    assert found == [utc(2026, 9, 1, 6), utc(2026, 10, 1, 6)]


def test_between_keeps_the_latest_of_a_year_of_every_second():
    timing = occ.timing(every="1s", start_at=utc(2026, 1, 1))
    began = time.perf_counter()
    found = occ.between(timing, utc(2025, 6, 1), utc(2027, 1, 1, 0, 0, 0, 999), 3)
    assert time.perf_counter() - began < 1
    assert found == [utc(2026, 12, 31, 23, 59, 58), utc(2026, 12, 31, 23, 59, 59), utc(2027, 1, 1)]
    assert occ.between(timing, utc(2025, 6, 1), utc(2026, 1, 1, 0, 0, 2), 10) == [
        utc(2026, 1, 1),
        utc(2026, 1, 1, 0, 0, 1),
        utc(2026, 1, 1, 0, 0, 2),
    ]


def test_between_keeps_the_latest_of_an_rrule():
    timing = occ.timing(rrule="FREQ=SECONDLY", anchor=utc(2026, 1, 1))
    began = time.perf_counter()
    found = occ.between(timing, utc(2026, 1, 1), utc(2026, 3, 1), 2)
    assert time.perf_counter() - began < 1
    assert found == [utc(2026, 2, 28, 23, 59, 59), utc(2026, 3, 1)]


# -- storing and naming --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "timing",
    [
        occ.timing(cron="0 9 * * 1", tz=NEW_YORK, start_at=utc(2026, 1, 1), end_at=utc(2027, 1, 1)),
        occ.timing(every="1h30m", anchor=datetime(2026, 1, 1, 9, 0, 0, 123000, tzinfo=UTC)),
        occ.timing(every=timedelta(seconds=1, microseconds=500)),
        occ.timing(rrule=EVERY_FOURTH_SATURDAY, tz="Europe/Paris", anchor=utc(2026, 3, 1, 12)),
    ],
)
def test_to_json_and_from_json_round_trip(timing):
    data = occ.to_json(timing)
    assert set(data) == {"cron", "every", "rrule", "tz", "start_at", "end_at", "anchor"}
    assert occ.from_json(data) == timing
    assert all(value is None or isinstance(value, str | float) for value in data.values())


def test_to_json_gives_every_in_seconds_and_iso_datetimes():
    data = occ.to_json(occ.timing(every="1m30s", start_at=utc(2026, 5, 1, 9)))
    assert data == {
        "cron": None,
        "every": 90.0,
        "rrule": None,
        "tz": "UTC",
        "start_at": "2026-05-01T09:00:00+00:00",
        "end_at": None,
        "anchor": None,
    }


def test_timing_keeps_its_datetimes_in_utc():
    paris = datetime(2026, 5, 1, 11, tzinfo=ZoneInfo("Europe/Paris"))
    timing = occ.timing(cron="0 * * * *", start_at=paris)
    assert timing.start_at == utc(2026, 5, 1, 9)
    assert timing.start_at.tzinfo is UTC


def test_occurrence_id():
    assert (
        occurrence_id("monthly-invoices", utc(2026, 10, 1, 6))
        == "monthly-invoices@2026-10-01T06:00:00.000Z"
    )
    paris = datetime(2026, 10, 1, 8, 0, 0, 250999, tzinfo=ZoneInfo("Europe/Paris"))
    assert occurrence_id("x", paris) == "x@2026-10-01T06:00:00.250Z"


# -- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields, field",
    [
        ({}, "cron, every or rrule"),
        ({"cron": "* * * * *", "every": "1m"}, "cron and every"),
        ({"cron": "0 9 * *"}, "cron"),
        ({"cron": "0 0 9 * * * 2026"}, "cron"),
        ({"cron": "61 * * * *"}, "cron"),
        ({"cron": "a b c d e"}, "cron"),
        ({"cron": "0 0 30 2 *"}, "cron"),
        ({"every": "500ms"}, "every"),
        ({"every": "soon"}, "every"),
        ({"every": "1h", "tz": NEW_YORK}, "every"),
        ({"cron": "0 9 * * *", "tz": "Mars/Olympus_Mons"}, "tz"),
        ({"rrule": "FREQ=FORTNIGHTLY"}, "rrule"),
        ({"rrule": "BYDAY=MO"}, "rrule"),
        ({"rrule": "DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY"}, "rrule"),
        ({"cron": "0 9 * * *", "start_at": utc(2026, 2, 1), "end_at": utc(2026, 1, 1)}, "end_at"),
        ({"cron": "0 9 * * *", "start_at": datetime(2026, 1, 1)}, "start_at"),
        ({"cron": "0 9 * * *", "end_at": datetime(2026, 1, 1)}, "end_at"),
        ({"every": "1h", "anchor": datetime(2026, 1, 1)}, "anchor"),
    ],
)
def test_bad_timing_raises_a_value_error_naming_the_field(fields, field):
    with pytest.raises(ValueError, match=field):
        occ.timing(**fields)


def test_naive_after_and_until_are_refused():
    timing = occ.timing(cron="0 9 * * *")
    with pytest.raises(ValueError, match="after"):
        occ.next_after(timing, datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="until"):
        occ.between(timing, utc(2026, 1, 1), datetime(2026, 2, 1), 5)


def test_an_offset_that_is_not_utc_is_read_as_the_same_instant():
    timing = occ.timing(cron="0 9 * * *")
    after = datetime(2026, 5, 1, 11, tzinfo=timezone(timedelta(hours=5)))
    assert occ.next_after(timing, after) == utc(2026, 5, 1, 9)
