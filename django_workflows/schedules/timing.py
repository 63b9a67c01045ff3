"""When a schedule's occurrences fall: the Timing (one of `cron`, `every` or `rrule`, within
`start_at`/`end_at`), its checks and JSON form, and its occurrences after a time or in a span.

Cron and rrule times are wall-clock times in the schedule's time zone. When the clocks go back,
a wall-clock time that happens twice runs once, the first time; when they go forward, one that
does not exist runs as much later as the clocks jumped. `every` is a fixed interval counted from
`start_at`, else from the `anchor`, else from the Unix epoch. Occurrences come out as aware UTC
datetimes truncated to whole milliseconds, strictly increasing. Nothing here touches the database.

The expressions are parsed by `cron.py` and `rrule.py`, which give naive wall-clock times; this
module reads them in the schedule's time zone, across its clock changes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from itertools import islice, takewhile
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..durations import Duration, format_duration, parse_duration
from .cron import check_cron, cron_source, first_cron_window
from .rrule import check_rrule, rule_body, rule_source

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_MICROSECOND = timedelta(microseconds=1)
_MILLISECOND_US = 1000
# How far back to look for the clock change that `after` may fall just after.
_CHANGE_SPAN = timedelta(days=1)
# The first window `between` searches back from `until`; it doubles until it holds enough.
_FIRST_WINDOW = timedelta(minutes=1)

NaiveSource = Callable[[datetime], Iterator[datetime]]


@dataclass(frozen=True)
class Timing:
    """When a schedule runs: exactly one of `cron`, `every` or `rrule`, within start_at/end_at.

    Build it with `timing()` or `from_json()`, which validate it and keep its datetimes in UTC.
    """

    cron: str | None = None
    every: timedelta | None = None
    rrule: str | None = None
    tz: str = "UTC"
    start_at: datetime | None = None
    end_at: datetime | None = None
    anchor: datetime | None = None


# -- building and storing ------------------------------------------------------------------------


def timing(
    *,
    cron: str | None = None,
    every: Duration | None = None,
    rrule: str | None = None,
    tz: str = "UTC",
    start_at: datetime | None = None,
    end_at: datetime | None = None,
    anchor: datetime | None = None,
) -> Timing:
    """A validated Timing; `every` may be any duration form; raises ValueError naming the problem."""
    given = [
        name
        for name, value in (("cron", cron), ("every", every), ("rrule", rrule))
        if value is not None
    ]
    if len(given) != 1:
        which = "none" if not given else " and ".join(given)
        raise ValueError(f"a schedule needs exactly one of cron, every or rrule, not {which}.")
    zone_name = _check_tz(tz)
    start_at = _check_instant(start_at, "start_at")
    end_at = _check_instant(end_at, "end_at")
    anchor = _check_instant(anchor, "anchor")
    if start_at is not None and end_at is not None and end_at < start_at:
        raise ValueError(f"end_at {end_at.isoformat()} is before start_at {start_at.isoformat()}.")
    return Timing(
        cron=None if cron is None else check_cron(cron),
        every=None if every is None else _check_every(every, zone_name),
        rrule=None if rrule is None else check_rrule(rrule),
        tz=zone_name,
        start_at=start_at,
        end_at=end_at,
        anchor=anchor,
    )


def to_json(timing: Timing) -> dict[str, Any]:
    """The timing as a JSON-safe dict: `every` in seconds, datetimes as ISO 8601 strings."""
    return {
        "cron": timing.cron,
        "every": None if timing.every is None else timing.every.total_seconds(),
        "rrule": timing.rrule,
        "tz": timing.tz,
        "start_at": _iso(timing.start_at),
        "end_at": _iso(timing.end_at),
        "anchor": _iso(timing.anchor),
    }


def from_json(data: dict[str, Any]) -> Timing:
    """The Timing that `to_json` made `data` from."""
    return timing(
        cron=data.get("cron"),
        every=data.get("every"),
        rrule=data.get("rrule"),
        tz=data.get("tz") or "UTC",
        start_at=_from_iso(data.get("start_at"), "start_at"),
        end_at=_from_iso(data.get("end_at"), "end_at"),
        anchor=_from_iso(data.get("anchor"), "anchor"),
    )


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _from_iso(value: str | datetime | None, what: str) -> datetime | None:
    """A stored datetime read back; a datetime passes through."""
    if value is None or isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} {value!r} is not an ISO 8601 datetime.")


# -- validation ----------------------------------------------------------------------------------


def _check_tz(tz: str) -> str:
    """`tz`, when it names an IANA time zone."""
    _zone(tz)
    return tz


def _zone(tz: str) -> ZoneInfo:
    """The IANA time zone named `tz`; ValueError naming tz when there is none."""
    if not isinstance(tz, str) or not tz:
        raise ValueError(f"tz must be the name of an IANA time zone, not {tz!r}.")
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(f"tz {tz!r} is not a known IANA time zone (such as 'Europe/Paris').")


def _check_instant(value: datetime | None, what: str) -> datetime | None:
    """`value` in UTC, truncated to whole milliseconds; ValueError when it is naive."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise ValueError(f"{what} must be a datetime, not {type(value).__name__}.")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{what} {value.isoformat()} is naive: give a timezone-aware datetime.")
    return _to_milliseconds(value.astimezone(UTC))


def _check_every(every: Duration, tz: str) -> timedelta:
    """`every` as a timedelta of at least one second, with no time zone."""
    if tz != "UTC":
        raise ValueError(
            f"every takes no tz (it is a fixed interval), not {tz!r}: use cron or rrule for "
            f"wall-clock times."
        )
    interval = parse_duration(every, "every")
    if interval < timedelta(seconds=1):
        raise ValueError(f"every must be at least one second, not {format_duration(interval)}.")
    return interval


# -- finding occurrences -------------------------------------------------------------------------


def next_after(timing: Timing, after: datetime) -> datetime | None:
    """The first occurrence strictly after `after` (aware), within start_at/end_at; None when
    there is none."""
    return next(_occurrences(timing, after), None)


def upcoming(timing: Timing, after: datetime, count: int) -> list[datetime]:
    """Up to `count` next occurrences strictly after `after`, in order."""
    if count <= 0:
        return []
    return list(islice(_occurrences(timing, after), count))


def between(timing: Timing, after: datetime, until: datetime, limit: int) -> list[datetime]:
    """The occurrences in (after, until], in order, at most the last `limit` of them."""
    after = _lower_bound(timing, _argument(after, "after"))
    until = _argument(until, "until")
    if timing.end_at is not None:
        until = min(until, timing.end_at)
    if limit <= 0 or until <= after:
        return []
    if timing.every is not None:
        return _last_every(timing, after, until, limit)
    return _last_wall_clock(timing, after, until, limit)


def _argument(value: datetime, what: str) -> datetime:
    """An aware datetime argument, in UTC."""
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{what} must be a timezone-aware datetime, not {value!r}.")
    return value.astimezone(UTC)


def _lower_bound(timing: Timing, after: datetime) -> datetime:
    """`after`, moved up to just before start_at."""
    if timing.start_at is not None:
        return max(after, timing.start_at - _MICROSECOND)
    return after


def _occurrences(timing: Timing, after: datetime) -> Iterator[datetime]:
    """The occurrences strictly after `after`, in order, within start_at/end_at."""
    after = _lower_bound(timing, _argument(after, "after"))
    found = (
        _every_after(timing, after)
        if timing.every is not None
        else _wall_clock_after(timing, after)
    )
    for at in found:
        if timing.end_at is not None and at > timing.end_at:
            return
        yield at


# -- every ---------------------------------------------------------------------------------------


def _every_grid(timing: Timing) -> tuple[int, int]:
    """The first occurrence and the interval of an `every` timing, in microseconds."""
    assert timing.every is not None
    origin = timing.start_at or timing.anchor or EPOCH
    return _microseconds(_to_milliseconds(origin)), timing.every // _MICROSECOND


def _first_index_after(origin: int, step: int, after: datetime) -> int:
    """The index of the first `every` occurrence whose millisecond is after `after`."""
    lowest = _floor_milliseconds(_microseconds(after)) + _MILLISECOND_US
    return max(0, -((origin - lowest) // step))


def _every_after(timing: Timing, after: datetime) -> Iterator[datetime]:
    """The `every` occurrences strictly after `after`, endlessly (until datetime runs out)."""
    origin, step = _every_grid(timing)
    index = _first_index_after(origin, step, after)
    try:
        while True:
            yield _from_microseconds(origin + index * step)
            index += 1
    except OverflowError:
        return


def _last_every(timing: Timing, after: datetime, until: datetime, limit: int) -> list[datetime]:
    """The last `limit` `every` occurrences in (after, until], counted without enumerating."""
    origin, step = _every_grid(timing)
    first = _first_index_after(origin, step, after)
    ceiling = _floor_milliseconds(_microseconds(until)) + _MILLISECOND_US - 1
    last = (ceiling - origin) // step
    return [
        _from_microseconds(origin + index * step)
        for index in range(max(first, last - limit + 1), last + 1)
    ]


def _microseconds(at: datetime) -> int:
    return (at - EPOCH) // _MICROSECOND


def _floor_milliseconds(microseconds: int) -> int:
    return microseconds - microseconds % _MILLISECOND_US


def _from_microseconds(microseconds: int) -> datetime:
    """The UTC datetime `microseconds` after the epoch, truncated to the millisecond."""
    return EPOCH + timedelta(microseconds=_floor_milliseconds(microseconds))


def _to_milliseconds(at: datetime) -> datetime:
    return at.replace(microsecond=at.microsecond - at.microsecond % 1000)


# -- cron and rrule: wall-clock times ------------------------------------------------------------


def _wall_clock_after(timing: Timing, after: datetime) -> Iterator[datetime]:
    """The cron or rrule occurrences strictly after `after`, in order.

    The rule yields naive wall-clock times in order; each is read with fold=0 (so a repeated
    time is its first pass, and a skipped one as late as the clocks jumped). A time at or
    before one already given (a skipped time shadowing a real one after the jump) is dropped.
    """
    zone = _zone(timing.tz)
    source = _source(timing, zone)
    latest = after
    for start, stop in _wall_clock_ranges(zone, after):
        for naive in source(start):
            if stop is not None and naive >= stop:
                break
            at = naive.replace(tzinfo=zone).astimezone(UTC)
            if at > latest:
                latest = at
                yield _to_milliseconds(at)


def _wall_clock_ranges(zone: tzinfo, after: datetime) -> list[tuple[datetime, datetime | None]]:
    """The naive wall-clock ranges, each (exclusive start, exclusive stop or None), whose times
    can be occurrences after `after`; a clock change just before `after` decides them."""
    local = _naive(after, zone)
    before = after - _CHANGE_SPAN
    old, new = _offset(before, zone), _offset(after, zone)
    if old != new:
        change = _change_between(zone, before, after, old)
        if new < old and after < change + (old - new):
            return [(_naive_at(change, old) - _MICROSECOND, None)]
        if new > old and after < change + (new - old):
            return [(local - (new - old), _naive_at(change, new)), (local, None)]
    return [(local, None)]


def _change_between(zone: tzinfo, before: datetime, after: datetime, old: timedelta) -> datetime:
    """The instant in (before, after] when the UTC offset stops being `old`."""
    low, high = _microseconds(before), _microseconds(after)
    while high - low > 1:
        middle = (low + high) // 2
        if _offset(EPOCH + timedelta(microseconds=middle), zone) == old:
            low = middle
        else:
            high = middle
    return EPOCH + timedelta(microseconds=high)


def _offset(at: datetime, zone: tzinfo) -> timedelta:
    return at.astimezone(zone).utcoffset() or timedelta()


def _naive(at: datetime, zone: tzinfo) -> datetime:
    """The wall-clock time of `at` in `zone`, naive."""
    return at.astimezone(zone).replace(tzinfo=None)


def _naive_at(at: datetime, offset: timedelta) -> datetime:
    """The wall-clock time of `at` under `offset`, naive."""
    return (at.astimezone(UTC) + offset).replace(tzinfo=None)


def _source(timing: Timing, zone: ZoneInfo) -> NaiveSource:
    """The timing's naive wall-clock times after a given one, as a function."""
    if timing.cron is not None:
        return cron_source(timing.cron)
    assert timing.rrule is not None
    start = timing.start_at or timing.anchor
    if start is None:
        raise ValueError("an rrule schedule needs start_at or an anchor.")
    return rule_source(rule_body(timing.rrule), _naive(start, zone), zone)


def _last_wall_clock(
    timing: Timing, after: datetime, until: datetime, limit: int
) -> list[datetime]:
    """The last `limit` cron or rrule occurrences in (after, until].

    It searches windows back from `until`, each twice the last, until one holds `limit`
    occurrences or reaches `after`; a cron's first window is where its `limit`-th time before
    `until` falls.
    """
    window = (
        first_cron_window(timing.cron, _zone(timing.tz), until, limit)
        if timing.cron is not None
        else _FIRST_WINDOW
    )
    while True:
        start = max(after, until - window)
        found = deque(takewhile(lambda at: at <= until, _occurrences(timing, start)), maxlen=limit)
        if len(found) == limit or start == after:
            return list(found)
        window *= 2
