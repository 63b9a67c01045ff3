"""The dry replay: a stored instance's journal run through workflow code without a side effect
or a write, to tell whether that code still reaches the journal in order (checkworkflows
--replay, testing.replay()).

Steps return their journaled results (a failed one raises again), sleeps, waits, children and
values replay their entries; the replay stops at the journal's frontier: the first operation
with no entry, or one that would have to wait. There it runs the check a worker runs before a
new step (`x.journal.check_replay`). It also compares each replayed entry's position with the one
journaled, which a worker does not: a worker finds entries by name, so two completed steps
swapped replay without a word, each returning a result made before the other had run.
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from typing import Any

from .. import errors
from ..definitions import Workflow
from ..models import WorkflowInstance
from ..store import instances as store
from ..store.jsonvalues import to_json
from . import journal
from .context import WorkflowContext
from .guards import Guards
from .interrupts import ReplayEnd
from .lease import Lease
from .registry import registry
from .replay import Replay
from .stops import Stops
from .surface import Compensation

__all__ = ["DryReplay", "compensations_to_run", "dry_replay"]


class DryJournal(Replay):
    """The journal of a dry replay: it notes where each thread is (for the check at the
    frontier) and the first entry reached at another position than it was journaled at."""

    def __init__(self, guards: Guards, journal_entries: list[tuple[str, dict[str, Any]]]):
        super().__init__(guards, journal_entries)
        self.replay_only = True  # values.py and stops.py stop at the frontier on their own
        self.moved: errors.WorkflowNonDeterminismError | None = None  # the first reordered entry

    def enter(self, name: str, kind: str) -> tuple[tuple[int, ...], dict[str, Any] | None]:
        """Replay.enter(), noting where this thread is and the first entry moved."""
        position, entry = super().enter(name, kind)
        self.local.entered = (name, position)
        recorded = entry.get("pos") if entry is not None else None
        if recorded is not None and list(recorded) != list(position):
            with self.lock:
                if self.moved is None:
                    self.moved = _mismatch(
                        self.instance,
                        f'"{name}" was journaled at position {_place(recorded)} and is now '
                        f"reached at {_place(position)}: a deployed change reordered the "
                        f"operations before it, or added or removed one there.",
                    )
        return position, entry

    def unreached(self) -> list[str]:
        """The journal's entries that the replay did not reach (the engine's own left out)."""
        with self.lock:
            return [
                name
                for name, doc in self.entries.items()
                if name not in self.reached and doc.get("kind") not in journal.ENGINE_KINDS
            ]


class DryStops(Stops):
    """A dry replay stops at the frontier: the first operation that is not a replay."""

    def check_interrupts(self, name: str | None, entry: dict[str, Any] | None) -> None:
        """The frontier: run the worker's check before a new step, then stop."""
        guards = self.guards
        if guards.definition_error is not None:
            raise guards.definition_error
        if name is not None:
            entered = getattr(guards.local, "entered", None)
            position = entered[1] if entered and entered[0] == name else self.journal.path()
            self.journal.check_replay(name, position)
        raise guards.interrupted(ReplayEnd())


class DryLease(Lease):
    """No lease: whatever would write or read signals is past the frontier (ReplayEnd)."""

    def write(self, **kwargs: Any) -> store.LeaseFlags:
        """Never a write: what would write is past the frontier."""
        raise self.guards.interrupted(ReplayEnd())

    def write_here(self) -> store.LeaseFlags:
        """Never a write (an atomic step's): past the frontier too."""
        raise self.guards.interrupted(ReplayEnd())

    def to_json(self, value: Any, what: str) -> Any:
        """`value` in its JSON form, without the database's size check: nothing is stored, and
        an export replays without a database."""
        return to_json(value, what)

    def signals(self, name: str, key: str | None) -> list[Any]:
        """Never a read of signals: a wait that would read them is the frontier."""
        raise self.guards.interrupted(ReplayEnd())

    def signals_recorded_before(
        self, waits: list[tuple[str, str | None]], deadline: datetime
    ) -> list[Any]:
        """Never a read of signals: the frontier too."""
        raise self.guards.interrupted(ReplayEnd())


class DryReplay:
    """An execution that only replays (a surface.Surface): it holds no lease and never writes.
    Whatever would write, read signals or run a step's function first reaches the frontier
    (ReplayEnd)."""

    def __init__(
        self,
        instance: WorkflowInstance,
        definition: Workflow,
        journal_entries: list[tuple[str, dict[str, Any]]],
        *,
        using: str,
    ):
        self.guards = guards = Guards(instance, definition, using=using)
        self.journal = replay = DryJournal(guards, list(journal_entries))
        self.stops = stops = DryStops(guards, replay)
        self.lease = DryLease(
            guards,
            replay,
            stops,
            token="",
            last_signal_id=instance.signal_cursor,
            lease_duration=timedelta(minutes=1),
        )
        self.instance = instance
        self.definition = definition
        self.using = using
        self.lock = guards.lock
        self.local = guards.local
        self.compensations: list[Compensation] = []

    def resolve(self, workflow: Any, version: int | None) -> Workflow:
        """registry.resolve(): the definition a child or a continue-as-new runs."""
        return registry.resolve(workflow, version)


def _mismatch(instance: WorkflowInstance, what: str) -> errors.WorkflowNonDeterminismError:
    return errors.WorkflowNonDeterminismError(
        f'Instance "{instance.id}" of workflow "{instance.workflow}@'
        f'{instance.version}" does not match its journal: {what}'
    )


def _place(position: Any) -> str:
    return ".".join(str(part) for part in position) or "-"


def _replayed(
    instance: WorkflowInstance,
    definition: Workflow,
    journal_entries: list[tuple[str, dict[str, Any]]],
    using: str,
) -> tuple[DryReplay, errors.WorkflowNonDeterminismError | None]:
    """The dry replay of `journal_entries` through `definition`'s code, and its first mismatch
    (None when the code reaches the journal in order)."""
    x = DryReplay(instance, definition, journal_entries, using=using)
    stopped = "returned"
    try:
        definition.run(WorkflowContext(x), copy.deepcopy(instance.input))
    except errors.WorkflowInterrupt:
        # The frontier, or another stop of the engine's (a continue-as-new): the end.
        stopped = "reached an operation with no entry, or one that would wait"
    except Exception as error:  # raising after the journal's end is no mismatch
        stopped = f"raised {type(error).__name__}: {error}"
    finally:
        x.guards.forget_interrupt()
    if x.guards.definition_error is not None:
        found = x.guards.definition_error
        if isinstance(found, errors.WorkflowNonDeterminismError):
            return x, found
        mismatch = _mismatch(x.instance, str(found))
        mismatch.__cause__ = found
        return x, mismatch
    unreached = x.journal.unreached()
    if unreached:
        names = ", ".join(f'"{name}"' for name in unreached)
        return x, _mismatch(
            x.instance,
            f"{names} {'was' if len(unreached) == 1 else 'were'} journaled by an earlier run but "
            f"not reached: the code {stopped} first. A deployed change renamed, removed or "
            f"reordered them, or the code no longer takes what they returned.",
        )
    return x, x.journal.moved


def dry_replay(
    instance: WorkflowInstance,
    definition: Workflow,
    journal_entries: list[tuple[str, dict[str, Any]]],
    *,
    using: str,
) -> errors.WorkflowNonDeterminismError | None:
    """Replay `journal_entries` (decoded, in first-write order) of `instance` through
    `definition`'s code, running no step and writing nothing: None when the code reaches the
    journal in order, else the first mismatch found (a step renamed, removed, reordered or
    reached as another kind; a definition error the code raises on this journal).

    A workflow that returns or raises before the frontier is a mismatch only if it left
    entries unreached. Raises what is not the workflow's: a KeyboardInterrupt, a SystemExit."""
    return _replayed(instance, definition, journal_entries, using)[1]


def compensations_to_run(
    instance: WorkflowInstance,
    definition: Workflow,
    journal_entries: list[tuple[str, dict[str, Any]]],
    *,
    using: str,
) -> list[str]:
    """The steps whose compensations an undo of `instance` would run now, in the order it would
    run them, as the engine decides it: the completed steps with a compensation since the last
    commit point, latest position first, less those whose compensation completed already. The
    dry replay of the journal finds them, running no step and writing nothing.

    Raises WorkflowNonDeterminismError when the code does not match the journal (the list
    would be a guess), and what dry_replay() raises."""
    x, mismatch = _replayed(instance, definition, journal_entries, using)
    if mismatch is not None:
        raise mismatch
    done = {
        name
        for name, entry in journal_entries
        if entry.get("kind") == "compensation" and entry.get("status") == journal.COMPLETED
    }
    return [
        compensation.step
        for compensation in sorted(x.compensations, key=lambda c: c.position, reverse=True)
        if f"{journal.COMPENSATION_PREFIX}{compensation.step}" not in done
    ]
