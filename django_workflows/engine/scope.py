"""Whether this thread runs a step's function, and which: the one fact that both the client and
the engine need about where a call comes from.

The engine sets `running_step` around a step's function; `start()` and `signal()` read it to
derive their ids from the step (a step runs at least once, and its repeat must start and send
nothing twice). Below both the client and the engine, so neither imports the other for it.
"""

from __future__ import annotations

import contextvars
from typing import Protocol


class RunningStep(Protocol):
    """What the client asks of the step whose function runs (engine.stepcontext.StepContext)."""

    def start_id(self, workflow: str) -> str:
        """The id of this attempt's next start() of `workflow` that was given no id."""
        ...

    def signal_id(self, name: str, key: str | None) -> str:
        """The dedupe id of this attempt's next signal() of `name` with `key` given no id."""
        ...


running_step: contextvars.ContextVar[RunningStep | None] = contextvars.ContextVar(
    "django_workflows_running_step", default=None
)
"""The step whose function runs in this thread, if any."""
