"""The surface of one execution that the `ctx` concerns use (steps.py, waits.py, children.py...),
declared once: each of them takes `x: Surface` and reaches the execution only through it.
execution.Execution implements it (and `Ending`, for an undo or a restart) by holding its parts:
`x.guards` (guards.py), `x.journal` (replay.py), `x.stops` (stops.py), `x.lease` (lease.py);
dryrun.DryReplay holds the same parts, those that would write or wait replaced. Only
execution.py and dryrun.py build an execution. This module imports no concern module, and the
parts' modules import neither it nor a concern: no import goes back up."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .. import errors
    from ..definitions import Workflow
    from ..models import WorkflowInstance
    from .guards import Guards
    from .lease import Lease
    from .replay import Replay
    from .stops import Stops


@dataclass
class Compensation:
    """A completed step's compensation, to run with its result if the instance is undone."""

    position: tuple[int, ...]
    step: str
    fn: Callable[[Any, Any], Any]  # fn(result, step), `step` the attempt's StepContext
    retry: Any
    result: Any


class Surface(Protocol):
    """One execution as the ctx concerns see it: what all its parts share, and its parts."""

    # Shared by every part (the same objects as its guards'): the instance, its definition,
    # the database alias, the lock, and the per-thread state: `path` (a gather branch's
    # position), `branch` (may call ctx), `in_step` (runs a step's function) and `interrupt`
    # (noted by guards.interrupted()).
    instance: WorkflowInstance
    definition: Workflow
    using: str
    lock: threading.RLock
    local: threading.local

    compensations: list[Compensation]  # the completed steps' compensations (compensations.py)

    def resolve(self, workflow: Any, version: int | None) -> Workflow:
        """The registered definition of `workflow` (a name or a Workflow) at `version`, else
        its highest (registry.resolve): the one a child or a continue-as-new runs."""

    # Its parts, each set once (read-only here, so that a dry replay's parts, subclasses of
    # these, fit too).

    @property
    def guards(self) -> Guards:
        """The rules for a ctx call, the definition error, the events (guards.py)."""

    @property
    def journal(self) -> Replay:
        """The entries, the positions, the replay check, the buffered entries (replay.py)."""

    @property
    def stops(self) -> Stops:
        """The cancel flags, the stop reason, the suspension (stops.py)."""

    @property
    def lease(self) -> Lease:
        """The lease, the fenced buffered write, the store calls, the signals read (lease.py)."""


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
