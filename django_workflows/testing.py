"""Testing helpers: a manual clock, use_clock(), the pytest plugin's workflow_clock fixture, and
replay(), the dry replay of one journal against workflow code.

This module is a pytest plugin (the `pytest11` entry point): it must import without Django set up,
so replay() imports what needs Django when it is called.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import ContextDecorator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import clock as engine_clock
from .durations import parse_duration

try:
    import pytest
except ImportError:  # pragma: no cover - pytest is only needed for the fixture
    pytest = None  # type: ignore[assignment]

__all__ = ["ManualClock", "replay", "use_clock"]


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


def replay(journal_or_instance_id: Any, workflow: Any = None) -> None:
    """Replay one journal against workflow code without running a step or writing anything, as
    `manage.py checkworkflows --replay` does for every stored instance.

    `journal_or_instance_id` is an export of `manage.py exportworkflow`: its dict, its JSON text
    (a string starting with "{"), or the path of its file (a `pathlib.Path` or another
    `os.PathLike`); any other string is the id of an instance stored in the database. `workflow`
    is the code to replay against: a @workflow definition, or a workflow's name (its highest
    registered version); by default the registered definition of the instance's
    workflow@version.

    Returns None when the code reaches the journal in order. Raises WorkflowNonDeterminismError
    for the first mismatch (a step renamed, removed, reordered or reached as another kind);
    WorkflowNotFoundError for an unknown instance id or a workflow that is not registered;
    TypeError for an argument of another type; ValueError for text or a file that is not an
    export; WorkflowPayloadError when the codec cannot read a stored instance.
    """
    from .client.exports import export_instance, read_export
    from .definitions import Workflow
    from .engine.registry import registry
    from .engine.replaycheck import replay_journal

    if workflow is not None and not isinstance(workflow, Workflow | str):
        raise TypeError(
            f"replay()'s workflow must be a @workflow definition or a workflow's name, not "
            f"{type(workflow).__name__}."
        )
    if isinstance(journal_or_instance_id, os.PathLike):
        document: Any = _parsed(Path(journal_or_instance_id).read_text(encoding="utf-8"))
    elif isinstance(journal_or_instance_id, str):
        if journal_or_instance_id.lstrip().startswith("{"):
            document = _parsed(journal_or_instance_id)
        else:
            document = export_instance(journal_or_instance_id)
    elif isinstance(journal_or_instance_id, dict):
        document = journal_or_instance_id
    else:
        raise TypeError(
            "replay() takes an export (a dict, its JSON text or a path to its file) or an "
            f"instance id, not {type(journal_or_instance_id).__name__}."
        )
    instance, entries = read_export(document)
    # A definition is replayed as given, registered or not; a name is the registry's.
    definition = registry.resolve(workflow) if isinstance(workflow, str) else workflow
    mismatch = replay_journal(instance, entries, definition)
    if mismatch is not None:
        raise mismatch


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"The export is not valid JSON: {error}.") from None


if pytest is not None:

    @pytest.fixture
    def workflow_clock() -> Iterator[ManualClock]:
        """A ManualClock in use for the test (1 January 2026, 00:00 UTC)."""
        clock = ManualClock()
        with use_clock(clock):
            yield clock
