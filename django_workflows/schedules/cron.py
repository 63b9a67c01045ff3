"""The cron parser: checks a schedule's cron expression (5 fields, or 6 with the seconds first)
and gives its naive wall-clock times, through croniter. The time zone is `timing.py`'s concern.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import CroniterBadDateError, croniter


def check_cron(cron: str) -> str:
    """The cron expression with its fields single-spaced; ValueError when croniter rejects it."""
    if not isinstance(cron, str):
        raise ValueError(f"cron must be a string, not {type(cron).__name__}.")
    fields = cron.split()
    if len(fields) not in (5, 6):
        raise ValueError(
            f"cron {cron!r} has {len(fields)} fields: give 5 "
            f"(minute hour day month weekday), or 6 with the seconds first."
        )
    expression = " ".join(fields)
    if not croniter.is_valid(expression, second_at_beginning=len(fields) == 6):
        raise ValueError(f"cron {cron!r} is not a valid cron expression.")
    if next(cron_source(expression)(datetime(2000, 1, 1)), None) is None:
        raise ValueError(f"cron {cron!r} never matches a date.")
    return expression


def cron_source(expression: str) -> Callable[[datetime], Iterator[datetime]]:
    """The cron expression's naive times strictly after a given one (6 fields: seconds first)."""
    seconds_first = len(expression.split()) == 6

    def times(start: datetime) -> Iterator[datetime]:
        matches = croniter(expression, start, ret_type=datetime, second_at_beginning=seconds_first)
        while True:
            try:
                yield matches.get_next(datetime)
            except CroniterBadDateError:
                return

    return times


def first_cron_window(expression: str, zone: ZoneInfo, until: datetime, limit: int) -> timedelta:
    """How far before `until` the cron's `limit`-th earlier wall-clock time falls (at least 1s);
    back to the Unix epoch when it has fewer than `limit` times before `until`."""
    matches = croniter(
        expression,
        until.astimezone(zone).replace(tzinfo=None) + timedelta(seconds=1),
        ret_type=datetime,
        second_at_beginning=len(expression.split()) == 6,
    )
    try:
        for _ in range(limit):
            earliest = matches.get_prev(datetime)
    except CroniterBadDateError:
        return until - datetime(1970, 1, 1, tzinfo=UTC)
    return max(until - earliest.replace(tzinfo=zone).astimezone(UTC), timedelta(seconds=1))
