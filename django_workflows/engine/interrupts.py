"""The engine's control flow. All are WorkflowInterrupt, a BaseException that
`except Exception:` in workflow code cannot swallow."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import WorkflowInterrupt

if TYPE_CHECKING:
    from ..definitions import Workflow


class Suspend(WorkflowInterrupt):
    """The instance parks: a sleep, a wait or a retry's backoff is not due yet."""


class Cancel(WorkflowInterrupt):
    """An operator's cancel (or terminate) reached the instance at a ctx call."""

    def __init__(self, terminate: bool):
        super().__init__("terminated" if terminate else "cancelled")
        self.terminate = terminate


class RunTimeout(WorkflowInterrupt):
    """The instance's run timeout (its deadline) passed."""


class JournalFull(WorkflowInterrupt):
    """The journal reached JOURNAL['MAX_ENTRIES'] or ['MAX_BYTES']."""


class LeaseLost(WorkflowInterrupt):
    """Another worker owns the instance now, or it was deleted: stop, write nothing more."""


class ReplayEnd(WorkflowInterrupt):
    """A replay that only rebuilds the compensations reached the end of the journal."""


class HandBack(WorkflowInterrupt):
    """The worker is shutting down: hand the instance back so another process picks it up now."""


class Unreadable(HandBack):
    """A payload the instance needs (a signal's) cannot be decoded: the codec does not list its
    key. Hand the instance back and leave it alone until the key is back."""

    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


class StoreFailed(WorkflowInterrupt):
    """The engine's own store call kept failing (the database cannot be reached, or refused
    the statement) until the lease would end: stop without writing more; the instance runs
    again from its journal. Never the workflow's error."""


class ContinueAsNew(WorkflowInterrupt):
    """ctx.continue_as_new(): end this run and start the instance over as `definition` with
    `input` (continuation.restart() writes it)."""

    def __init__(self, definition: Workflow, input: Any):
        super().__init__(f"continue as new: {definition.name}@{definition.version}")
        self.definition = definition
        self.input = input
