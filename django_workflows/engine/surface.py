"""The surface of one execution that the `ctx` concerns use (steps.py, waits.py, children.py...),
declared once: each of them takes `x: Surface` and reaches the execution only through it.
runtime.Runtime implements it (and execution.Execution, the `Ending` of an undo or a restart);
only execution.py and dryrun.py name the concrete classes. This module imports no concern
module, so the concerns and the execution's classes import each other through it, not around."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .. import errors
    from ..definitions import Workflow
    from ..models import WorkflowInstance
    from ..store import instances as store
    from .threads import OwnerCalls, StartGate


@dataclass
class Compensation:
    """A completed step's compensation, to run with its result if the instance is undone."""

    position: tuple[int, ...]
    step: str
    fn: Callable[[Any, Any], Any]  # fn(result, step), `step` the attempt's StepContext
    retry: Any
    result: Any


class RunningStep(Protocol):
    """A step attempt that runs now (stepcontext.StepContext): told of a cancel."""

    cancelled: threading.Event


class Surface(Protocol):
    """One execution as the ctx concerns see it. Its parts: the instance, the lock and the
    per-thread state (guards.Guards); the journal (replay.Replay); when the code stops
    (stops.Stops); the lease, the writes and the store calls (runtime.Runtime)."""

    # -- guards.Guards: what every part shares ---------------------------------------------

    instance: WorkflowInstance
    definition: Workflow
    using: str
    definition_error: errors.WorkflowDefinitionError | None
    lock: threading.RLock
    # Per thread: `path` (a gather branch's position), `branch` (may call ctx), `in_step`
    # (runs a step's function) and `interrupt` (noted by interrupted()).
    local: threading.local

    def now(self) -> datetime: ...

    def emit(self, type: str, **data: Any) -> None:
        """Send the event `type` about this instance, if a receiver wants it."""

    def define_error(
        self, error: errors.WorkflowDefinitionError
    ) -> errors.WorkflowDefinitionError: ...

    def guard_step(self, what: str) -> None: ...

    def interrupted(self, interrupt: BaseException) -> BaseException: ...

    def swallowed(self) -> BaseException | None: ...

    def noted(self, error: BaseException) -> BaseException: ...

    # -- replay.Replay: the journal --------------------------------------------------------

    journal: dict[str, dict[str, Any]]
    pending: dict[str, dict[str, Any]]
    reached: set[str]
    consumed: set[int]
    replay_only: bool
    warn_journal: bool
    counters: dict[tuple[int, ...], int]

    def path(self) -> tuple[int, ...]: ...

    def next_position(self) -> tuple[int, ...]: ...

    def next_child_number(self, workflow: str) -> int: ...

    def enter(self, name: str, kind: str) -> tuple[tuple[int, ...], dict[str, Any] | None]: ...

    def check_replay(self, name: str, position: tuple[int, ...]) -> None: ...

    def record(
        self, name: str, position: tuple[int, ...] | None, /, **doc: Any
    ) -> dict[str, Any]: ...

    def keep(self, name: str, doc: dict[str, Any]) -> None: ...

    def check_journal_limits(self, kind: str | None) -> None: ...

    # -- stops.Stops: when the code stops --------------------------------------------------

    flags: store.LeaseFlags
    stop_reason: str | None
    escaped: BaseException | None
    running_steps: set[RunningStep]
    gate: StartGate

    def check_interrupts(self, name: str | None, entry: dict[str, Any] | None) -> None: ...

    def escape(self, error: BaseException) -> BaseException: ...

    def fail(self, message: str) -> None: ...

    def stop_interrupt(self) -> BaseException: ...

    def suspend(
        self, *, wake_at: datetime | None = None, waits: list[tuple[str, str | None]] | None = None
    ) -> None: ...

    # -- runtime.Runtime: the lease, the writes, the store calls ----------------------------

    last_signal_id: int
    lease_deadline: float
    compensations: list[Compensation]
    desired_status: Any
    calls: OwnerCalls

    def resolve(self, workflow: Any, version: int | None) -> Workflow:
        """The definition of `workflow` (a name or a Workflow) the instance starts or goes on
        as: `version`, or the highest registered."""

    def store_call(self, fn: Callable[[], Any], what: str) -> Any: ...

    def to_json(self, value: Any, what: str) -> Any: ...

    def checkpoint(self, entry_name: str, progress: Any) -> None: ...

    def write(
        self,
        *,
        changes: dict[str, Any] | None = None,
        release: store.Release | None = None,
        guarded: dict[str, dict[str, Any]] | None = None,
        signal: dict[str, Any] | None = None,
        announce: bool = False,
        restart: bool = False,
        attributes: dict[str, Any] | None = None,
    ) -> store.LeaseFlags: ...

    def write_here(self) -> store.LeaseFlags: ...

    def signals(self, name: str, key: str | None) -> list[Any]: ...

    def signals_recorded_before(
        self, waits: list[tuple[str, str | None]], deadline: datetime
    ) -> list[Any]: ...


class Ending(Surface, Protocol):
    """An execution that ends its instance, undoes it (compensations.undo()) or starts it
    again (continuation.restart()): execution.Execution."""

    @property
    def had_waits(self) -> bool:
        """Whether the instance may have waits registered (a release registers them)."""

    def finish(
        self, status: str, *, output: Any = None, error: dict[str, Any] | None = None
    ) -> str: ...

    def cancel_error(self, terminate: bool) -> errors.WorkflowError: ...

    def close_children(self, why: str) -> None: ...
