"""The cron parser: checks a schedule's cron expression (5 fields, 6 with the seconds first, or
a standard macro such as @daily) and gives its naive wall-clock times, through croniter. The
time zone is `timing.py`'s concern.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import CroniterBadDateError, croniter

FIVE_FIELDS = ("minute", "hour", "day", "month", "weekday")
SIX_FIELDS = ("second", *FIVE_FIELDS)
MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_FORMS = (
    f"give 5 fields ({' '.join(FIVE_FIELDS)}), 6 with the seconds first "
    f"({' '.join(SIX_FIELDS)}), or one of {', '.join(MACROS)}"
)


def check_cron(cron: str) -> str:
    """The cron expression with its fields single-spaced (a macro as it is); ValueError when
    croniter rejects it, naming the fields it was read as."""
    if not isinstance(cron, str):
        raise ValueError(f"cron must be a string, not {type(cron).__name__}.")
    fields = cron.split()
    if len(fields) == 1 and fields[0].startswith("@"):
        if fields[0] not in MACROS:
            raise ValueError(f"cron {cron!r} is not a macro cron knows: {_FORMS}.")
        return fields[0]
    if len(fields) not in (5, 6):
        raise ValueError(f"cron {cron!r} has {len(fields)} fields: {_FORMS}.")
    expression = " ".join(fields)
    if not croniter.is_valid(expression, second_at_beginning=len(fields) == 6):
        names = SIX_FIELDS if len(fields) == 6 else FIVE_FIELDS
        raise ValueError(
            f"cron {cron!r} is not a valid cron expression, read as {len(fields)} fields "
            f"({' '.join(names)}): {_FORMS}."
        )
    if next(cron_source(expression)(datetime(2000, 1, 1)), None) is None:
        raise ValueError(f"cron {cron!r} never matches a date.")
    return expression


def cron_reading(expression: str) -> str:
    """How the cron expression is read, field by field: "second 0, minute 2, ... (6 fields:
    seconds first)", for the places that show a schedule."""
    fields = _fields(expression).split()
    names = SIX_FIELDS if len(fields) == 6 else FIVE_FIELDS
    reading = ", ".join(f"{name} {value}" for name, value in zip(names, fields, strict=False))
    if expression in MACROS:
        return f"{expression}: {reading}"
    return f"{reading} (6 fields: seconds first)" if len(fields) == 6 else reading


def _fields(expression: str) -> str:
    """The expression's fields: a macro's five, or the expression itself."""
    return MACROS.get(expression, expression)


def cron_source(expression: str) -> Callable[[datetime], Iterator[datetime]]:
    """The cron expression's naive times strictly after a given one (6 fields: seconds first)."""
    expression = _fields(expression)
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
    expression = _fields(expression)
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
