"""An execution's guards (`x.guards`): its instance, the lock and per-thread state its threads
and parts share, its events, and the rules every ctx call keeps (not inside a step, not from a
thread the workflow started, the first definition error wins, an engine interrupt cannot be
swallowed)."""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

from .. import clock, errors, events
from ..definitions import Workflow
from ..errors import WorkflowInterrupt
from ..models import WorkflowInstance


class Guards:
    """What every part of an execution shares (replay.Replay, stops.Stops, runtime.Lease):
    one per execution.Execution, its first part."""

    def __init__(self, instance: WorkflowInstance, definition: Workflow, *, using: str):
        self.instance = instance
        self.definition = definition
        self.using = using
        self.definition_error: errors.WorkflowDefinitionError | None = None
        self.lock = threading.RLock()
        # Per thread: `path` (a gather branch's position), `branch` (may call ctx), `in_step`
        # (runs a step's function) and `interrupt` (noted by interrupted()).
        self.local = threading.local()
        self.owner = threading.get_ident()

    def now(self) -> datetime:
        return clock.now()

    def emit(self, type: str, **data: Any) -> None:
        if not events.wanted(type):
            return
        events.emit(
            type,
            id=self.instance.id,
            workflow=self.instance.workflow,
            version=self.instance.version,
            at=self.now(),
            **data,
        )

    def define_error(self, error: errors.WorkflowDefinitionError) -> errors.WorkflowDefinitionError:
        """The execution's definition error: the first one found, which `error` may be."""
        with self.lock:
            if self.definition_error is None:
                self.definition_error = error
            return self.definition_error

    def guard_step(self, what: str) -> None:
        """Raise WorkflowDefinitionError for a ctx call (`what`) from a step's function or from
        a thread the workflow's code started, and the definition error found before if any."""
        if getattr(self.local, "in_step", False):
            raise self.define_error(
                errors.WorkflowDefinitionError(
                    f"{what} was called inside a step's function in instance {self.instance.id!r}. "
                    f"A step's function runs once and replays only see its result: call ctx only "
                    f"from the workflow, and raise NonRetryableStepError from a step instead of ctx.fail()."
                )
            )
        if threading.get_ident() != self.owner and not getattr(self.local, "branch", False):
            raise self.define_error(
                errors.WorkflowDefinitionError(
                    f"{what} was called from a thread that the workflow's code started itself, "
                    f"in instance {self.instance.id!r}. Call ctx only from the workflow's own "
                    f"thread; to run things at once, use ctx.gather()."
                )
            )
        if self.definition_error is not None:
            raise self.definition_error

    def interrupted(self, interrupt: BaseException) -> BaseException:
        """Note `interrupt`, about to be raised at a ctx call of this thread, and return it.
        Workflow code that swallows it gets it again at its next ctx call and at its end
        (swallowed()): the engine's control flow does not depend on the code re-raising it."""
        if getattr(self.local, "interrupt", None) is None:
            self.local.interrupt = interrupt
        return interrupt

    def swallowed(self) -> BaseException | None:
        """The interrupt raised at a ctx call of this thread, which its code has not let out."""
        return getattr(self.local, "interrupt", None)

    def noted(self, error: BaseException) -> BaseException:
        """A gather branch's error, raised again in the thread that called gather()."""
        return self.interrupted(error) if isinstance(error, WorkflowInterrupt) else error

    def forget_interrupt(self) -> None:
        """run() (or the thread's gather branch) ended: its interrupt was dealt with."""
        self.local.interrupt = None
