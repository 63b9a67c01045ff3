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
_TEXT = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w))+")

Duration = timedelta | int | float | str

# Words people write for the units ("10 minutes"), to say which short form to write instead.
_WORDS = re.compile(
    r"(\d+(?:\.\d+)?)\s*(milliseconds?|msecs?|seconds?|secs?|minutes?|mins?|hours?|hrs?|"
    r"days?|weeks?|wks?)",
    re.IGNORECASE,
)

MAX_DURATION = timedelta(days=36_525)
"""The longest duration the API takes: 100 years. Longer ones overflow datetime arithmetic
(datetime ends in the year 9999) long before they mean anything."""


def parse_duration(value: Duration, what: str = "duration") -> timedelta:
    """Return `value` as a timedelta; raise ValueError naming `what` when it is not a duration,
    is negative, or is longer than MAX_DURATION (100 years)."""
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a duration, not {value!r}.")
    if isinstance(value, timedelta):
        result = value
    elif isinstance(value, int | float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{what} must be a finite number of seconds, not {value!r}.")
        result = _seconds(value, what)
    elif isinstance(value, str):
        text = value.strip()
        position = 0
        result = timedelta()
        for match in _PART.finditer(text):
            if match.start() != position:
                break
            try:
                result += float(match.group(1)) * _UNITS[match.group(2)]
            except OverflowError:
                raise _too_long(value, what) from None
            position = match.end()
        if not text or position != len(text):
            raise ValueError(
                f"{what} {value!r} is not a duration{_instead(text)}: use a timedelta, a number "
                f'of seconds, or a string such as "500ms", "30s", "5m", "2h", "3d", "1w" or '
                f'"1h30m".'
            )
    else:
        raise ValueError(f"{what} must be a duration, not {type(value).__name__}.")
    if result < timedelta():
        raise ValueError(f"{what} {value!r} is negative.")
    if result > MAX_DURATION:
        raise _too_long(value, what)
    return result


def is_duration_text(text: str) -> bool:
    """Whether `text` is a duration as parse_duration() reads a string: "500ms", "1h30m"."""
    return _TEXT.fullmatch(text.strip()) is not None


def _seconds(value: int | float, what: str) -> timedelta:
    try:
        return timedelta(seconds=value)
    except OverflowError:
        raise _too_long(value, what) from None


def _too_long(value: Duration, what: str) -> ValueError:
    return ValueError(f"{what} {value!r} is longer than the most a duration can be, 100 years.")


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


def _instead(text: str) -> str:
    """' (write "10m")' for a duration written in words ("10 minutes", "1 hour 30 mins"), or
    ''."""
    parts = list(_WORDS.finditer(text))
    if not parts or _WORDS.sub("", text).strip(" ,"):
        return ""
    return f' (write "{"".join(part.group(1) + _unit(part.group(2)) for part in parts)}")'


def _unit(word: str) -> str:
    word = word.lower()
    if word.startswith(("mil", "ms")):
        return "ms"
    return "m" if word.startswith("mi") else word[0]
