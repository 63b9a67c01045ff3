"""The RRULE parser: checks a schedule's RFC 5545 recurrence rule and gives its naive wall-clock
times from a DTSTART, through dateutil. The time zone is `timing.py`'s concern, but for a UTC
`UNTIL`, which is read as the wall-clock time it is in the schedule's zone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

from dateutil.rrule import rrule as RecurrenceRule
from dateutil.rrule import rrulestr

_RULE_PERIODS = {
    "SECONDLY": timedelta(seconds=1),
    "MINUTELY": timedelta(minutes=1),
    "HOURLY": timedelta(hours=1),
    "DAILY": timedelta(days=1),
    "WEEKLY": timedelta(weeks=1),
}
_UTC_UNTIL = re.compile(r"(UNTIL=)(\d{8}T\d{6})Z", re.IGNORECASE)


def check_rrule(rrule: str) -> str:
    """The rule, stripped; ValueError when it is not one RFC 5545 RRULE."""
    if not isinstance(rrule, str):
        raise ValueError(f"rrule must be a string, not {type(rrule).__name__}.")
    text = rrule.strip()
    body = rule_body(text)
    if "\n" in body or "\r" in body or ":" in body or "DTSTART" in body.upper():
        raise ValueError(
            f"rrule {rrule!r} must be a single RRULE (such as 'FREQ=WEEKLY;BYDAY=MO'): "
            f"its DTSTART is start_at or the anchor."
        )
    for part in ("INTERVAL", "COUNT"):  # dateutil takes 0 and -1, and divides by the interval
        number = _rule_parts(body).get(part)
        if number is not None and not (number.isascii() and number.isdigit() and int(number) >= 1):
            raise ValueError(f"rrule {rrule!r}: {part} must be a positive integer, not {number!r}.")
    try:
        _rule(body, datetime(2000, 1, 1), ZoneInfo("UTC"))
    except (ValueError, TypeError, KeyError, IndexError) as error:
        raise ValueError(f"rrule {rrule!r} is not a valid RFC 5545 recurrence rule ({error}).")
    return text


def rule_source(
    body: str, dtstart: datetime, zone: tzinfo
) -> Callable[[datetime], Iterator[datetime]]:
    """The rule's naive times strictly after a given one, DTSTART being `dtstart` (naive)."""
    parts = _rule_parts(body)
    period = None if "COUNT" in parts else _RULE_PERIODS.get(parts.get("FREQ", ""))
    if period is not None:
        period *= int(parts.get("INTERVAL", "1"))

    def times(start: datetime) -> Iterator[datetime]:
        first = dtstart
        if period is not None and start - dtstart > period:
            first += ((start - dtstart) // period - 1) * period
        return _rule(body, first, zone).xafter(start, inc=False)

    return times


def _rule(body: str, dtstart: datetime, zone: tzinfo) -> RecurrenceRule:
    """The dateutil rule of `body` from naive `dtstart`, a UTC UNTIL read as wall-clock time."""

    def local_until(match: re.Match[str]) -> str:
        until = datetime.strptime(match.group(2), "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
        return f"{match.group(1)}{until.astimezone(zone):%Y%m%dT%H%M%S}"

    rule = rrulestr(_UTC_UNTIL.sub(local_until, body), dtstart=dtstart, cache=False)
    if not isinstance(rule, RecurrenceRule):
        raise ValueError("not a single RRULE")
    return rule


def rule_body(text: str) -> str:
    """The rule without its optional "RRULE:" prefix."""
    text = text.strip()
    return text[len("RRULE:") :].strip() if text.upper().startswith("RRULE:") else text


def _rule_parts(body: str) -> dict[str, str]:
    """The rule's NAME=VALUE parts, names upper-cased."""
    parts = {}
    for part in body.split(";"):
        name, _, value = part.partition("=")
        parts[name.strip().upper()] = value.strip().upper()
    return parts
