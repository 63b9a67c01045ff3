"""Every error of the public API. The ones with an HTTP meaning carry `status_code`."""

from __future__ import annotations

from typing import Any


class WorkflowError(Exception):
    """Base class of the package's errors."""

    status_code: int | None = None


class WorkflowIdConflictError(WorkflowError):
    """start() with an existing id but another workflow or input; a signal id reused with another key."""

    status_code = 409


class WorkflowNotFoundError(WorkflowError):
    """An unknown instance id, schedule id, or a workflow this application does not register."""

    status_code = 404


class WorkflowStateError(WorkflowError):
    """The instance's status does not allow the operation, or another change raced it."""

    status_code = 409


class NonRetryableStepError(Exception):
    """Raise it from a step to fail the step at once, without retrying."""


class StepFailedError(WorkflowError):
    """Inside run(): a step gave up. `cause` is the original error's {name, message};
    `traceback` the last attempt's formatted traceback (None when it raised nothing, as an
    attempt lost with its worker)."""

    def __init__(
        self,
        message: str,
        *,
        step: str,
        attempts: int,
        cause: dict[str, Any] | None,
        traceback: str | None = None,
    ):
        super().__init__(message)
        self.step = step
        self.attempts = attempts
        self.cause = cause
        self.traceback = traceback


class StepTimeoutError(WorkflowError):
    """A step attempt ran past its `timeout` or `heartbeat_timeout`. Retried."""


class WorkflowFailedError(WorkflowError):
    """ctx.fail(), or what result() raises for an instance that ended without completing."""

    def __init__(
        self,
        message: str,
        *,
        instance_id: str | None = None,
        status: str | None = None,
        cause: Any = None,
    ):
        super().__init__(message)
        self.instance_id = instance_id
        self.status = status
        self.cause = cause


class ChildWorkflowFailedError(WorkflowFailedError):
    """A child workflow failed, was cancelled or was terminated."""

    def __init__(self, message: str, *, workflow: str | None = None, **kwargs: Any):
        super().__init__(message, **kwargs)
        self.workflow = workflow


class WorkflowResultTimeoutError(WorkflowError):
    """result() or start_and_wait() waited past its timeout; the instance keeps running."""

    def __init__(self, message: str, *, instance_id: str, timeout: float):
        super().__init__(message)
        self.instance_id = instance_id
        self.timeout = timeout


class WorkflowDefinitionError(WorkflowError):
    """A name used twice in one run, a ctx call inside a step, or a bad definition."""


class WorkflowNonDeterminismError(WorkflowDefinitionError):
    """A deploy renamed, removed or reordered steps that a running instance journaled."""


class WorkflowInterrupt(BaseException):  # noqa: N818 - the SPEC's name
    """The engine's control flow (a suspension, a cancel). Never catch it; re-raise it."""


class WorkflowTimeoutError(WorkflowError):
    """By name on an instance that ran past its run timeout."""


class WorkflowCancelledError(WorkflowError):
    """By name on a cancelled instance; the message is the reason."""


class WorkflowTerminatedError(WorkflowError):
    """By name on a terminated instance; the message is the reason."""


class WorkflowDeletedError(WorkflowError):
    """By name, as the cause of a parent's ChildWorkflowFailedError after a forced delete."""


class WorkflowJournalLimitError(WorkflowError):
    """By name on an instance whose journal reached JOURNAL's MAX_ENTRIES or MAX_BYTES."""


class WorkflowStreamFullError(WorkflowError):
    """A stream write past STREAMS' MAX_ITEMS or MAX_BYTES for its stream; nothing was written.
    `stream` names the stream."""

    def __init__(self, message: str, *, stream: str):
        super().__init__(message)
        self.stream = stream


class WorkflowPayloadError(WorkflowError):
    """A stored payload that the CODEC setting cannot read: its codec or key is not listed, or it
    was changed or moved from another instance or field. `key` names the codec or key id."""

    def __init__(self, message: str, *, key: str | None = None):
        super().__init__(message)
        self.key = key
