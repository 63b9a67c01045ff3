"""Durations as the API takes them: a timedelta, a number of seconds, or a string like "1h30m"."""

from __future__ import annotations

import re
from datetime import timedelta

_UNITS = {
    "ms": timedelta(milliseconds=1),
    "s": timedelta(seconds=1),
    "m": timedelta(minutes=1),
    "h": timedelta(hours=1),
    "d": timedelta(days=1),
    "w": timedelta(weeks=1),
}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")

Duration = timedelta | int | float | str


def parse_duration(value: Duration, what: str = "duration") -> timedelta:
    """Return `value` as a timedelta; raise ValueError naming `what` when it is not a duration."""
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a duration, not {value!r}.")
    if isinstance(value, timedelta):
        result = value
    elif isinstance(value, int | float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{what} must be a finite number of seconds, not {value!r}.")
        result = timedelta(seconds=value)
    elif isinstance(value, str):
        text = value.strip()
        position = 0
        result = timedelta()
        for match in _PART.finditer(text):
            if match.start() != position:
                break
            result += float(match.group(1)) * _UNITS[match.group(2)]
            position = match.end()
        if not text or position != len(text):
            raise ValueError(
                f"{what} {value!r} is not a duration: use a timedelta, a number of seconds, "
                f'or a string such as "500ms", "30s", "5m", "2h", "3d", "1w" or "1h30m".'
            )
    else:
        raise ValueError(f"{what} must be a duration, not {type(value).__name__}.")
    if result < timedelta():
        raise ValueError(f"{what} {value!r} is negative.")
    return result


def format_duration(value: timedelta) -> str:
    """The shortest string `parse_duration` reads back as `value` ("1h30m", "500ms")."""
    remaining = round(value.total_seconds() * 1000)
    if remaining == 0:
        return "0s"
    parts = []
    for unit, size in (
        ("w", 604_800_000),
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1000),
        ("ms", 1),
    ):
        count, remaining = divmod(remaining, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
