"""A schedule row's `spec` and `state`, read and written.

The `spec` says when and how it runs: the timing, `limit`, `missed`, `overlap`, `priority`. The
`state` says where it is: the `cursor`, up to which occurrences were handled, the occurrences
started as `runs`, a `buffered` occurrence, and for a declared schedule when a process whose code
declares it last confirmed it. From both, `next_wake()` says when a worker next has something to
do for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..models import WorkflowSchedule
from . import timing as timings
from .timing import Timing

BUFFER_RECHECK = timedelta(minutes=1)


def spec_of(
    timing: Timing,
    *,
    limit: int | None,
    missed: str,
    overlap: str,
    priority: int | None,
    input_function: bool = False,
) -> dict[str, Any]:
    """The `spec` a schedule row stores: its timing as JSON, and how it runs."""
    return {
        "timing": timings.to_json(timing),
        "limit": limit,
        "missed": missed,
        "overlap": overlap,
        "priority": priority,
        "input_function": input_function,
    }


def timing_of(schedule: WorkflowSchedule) -> Timing:
    """The Timing the schedule row stores."""
    return timings.from_json(schedule.spec["timing"])


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def read_time(value: str | None) -> datetime | None:
    """A datetime stored as ISO 8601 in a row's JSON, read back."""
    return None if value is None else datetime.fromisoformat(value)


@dataclass
class State:
    """A schedule row's `state`: read with `State.of(row)`, stored as `state.json()`."""

    cursor: datetime
    runs: int = 0
    buffered: datetime | None = None
    confirmed_at: datetime | None = None

    @classmethod
    def of(cls, schedule: WorkflowSchedule) -> State:
        data = schedule.state or {}
        return cls(
            cursor=read_time(data.get("cursor")) or schedule.created_at,
            runs=int(data.get("runs", 0)),
            buffered=read_time(data.get("buffered")),
            confirmed_at=read_time(data.get("confirmed_at")),
        )

    def json(self) -> dict[str, Any]:
        return {
            "cursor": _iso(self.cursor),
            "runs": self.runs,
            "buffered": _iso(self.buffered),
            "confirmed_at": _iso(self.confirmed_at),
        }


def next_wake(timing: Timing, spec: dict[str, Any], state: State, now: datetime) -> datetime | None:
    """When a worker next has something to do for the schedule: its next occurrence (none once
    `limit` occurrences started), or soon again while an occurrence is buffered."""
    limit = spec.get("limit")
    if limit is not None and state.runs >= limit:
        return None
    wake = timings.next_after(timing, state.cursor)
    if state.buffered is not None:
        recheck = now + BUFFER_RECHECK
        wake = recheck if wake is None else min(wake, recheck)
    return wake
