"""Testing helpers: a manual clock, use_clock(), and the pytest plugin's workflow_clock fixture.

This module is a pytest plugin (the `pytest11` entry point): it must import without Django set up.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ContextDecorator
from datetime import UTC, datetime
from typing import Any

from . import clock as engine_clock
from .durations import parse_duration

try:
    import pytest
except ImportError:  # pragma: no cover - pytest is only needed for the fixture
    pytest = None  # type: ignore[assignment]

__all__ = ["ManualClock", "use_clock"]


class ManualClock:
    """A clock that only moves when told: `advance(duration)` or `set(when)`."""

    def __init__(self, start: datetime = datetime(2026, 1, 1, tzinfo=UTC)):
        if start.tzinfo is None:
            raise ValueError("ManualClock needs an aware datetime.")
        # When the test's world began: declared schedules count their occurrences from here,
        # as if the process had saved them as it started, before the test moved the clock.
        self.start = start.astimezone(UTC)
        self._now = self.start
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, duration: Any) -> datetime:
        """Move the clock forward by a duration ("3d", seconds, a timedelta); the new time."""
        with self._lock:
            self._now += parse_duration(duration, "advance()'s duration")
            return self._now

    def set(self, when: datetime) -> None:
        """Move the clock to the aware datetime `when`."""
        if when.tzinfo is None:
            raise ValueError("set() needs an aware datetime.")
        with self._lock:
            self._now = when.astimezone(UTC)


class use_clock(ContextDecorator):  # noqa: N801 - used like a function
    """Make the engine, the client and every worker use `clock`, process-wide, while active."""

    def __init__(self, clock: Any):
        if not callable(getattr(clock, "now", None)):
            raise TypeError(f"use_clock() needs an object with now(), got {clock!r}.")
        self.clock = clock

    def __enter__(self) -> Any:
        engine_clock.set_override(self.clock)
        return self.clock

    def __exit__(self, *exc: object) -> None:
        engine_clock.set_override(None)


if pytest is not None:

    @pytest.fixture
    def workflow_clock() -> Iterator[ManualClock]:
        """A ManualClock in use for the test (1 January 2026, 00:00 UTC)."""
        clock = ManualClock()
        with use_clock(clock):
            yield clock
