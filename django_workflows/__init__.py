"""Durable workflows for Django: journaled steps, signals, sleeps and compensations, in your database."""

from __future__ import annotations

from typing import Any

from .definitions import Concurrency, RateLimit, Retry, Schedule, WorkflowSignal
from .errors import (
    ChildWorkflowFailedError,
    NonRetryableStepError,
    StepFailedError,
    StepTimeoutError,
    WorkflowCancelledError,
    WorkflowDefinitionError,
    WorkflowDeletedError,
    WorkflowError,
    WorkflowFailedError,
    WorkflowIdConflictError,
    WorkflowInterrupt,
    WorkflowJournalLimitError,
    WorkflowNonDeterminismError,
    WorkflowNotFoundError,
    WorkflowPayloadError,
    WorkflowResultTimeoutError,
    WorkflowStateError,
    WorkflowTerminatedError,
    WorkflowTimeoutError,
)
from .registry import workflow

__all__ = [
    "CancelResult",
    "ChildWorkflowFailedError",
    "Concurrency",
    "InstanceStatus",
    "JournalEntry",
    "NonRetryableStepError",
    "PurgeResult",
    "RateLimit",
    "Retry",
    "Schedule",
    "SignalResult",
    "StartResult",
    "Status",
    "StepFailedError",
    "StepLog",
    "StepTimeoutError",
    "UpdateResult",
    "Wait",
    "WaitOutcome",
    "Webhook",
    "WorkflowCancelledError",
    "WorkflowDefinitionError",
    "WorkflowDeletedError",
    "WorkflowError",
    "WorkflowFailedError",
    "WorkflowIdConflictError",
    "WorkflowInterrupt",
    "WorkflowJournalLimitError",
    "WorkflowNonDeterminismError",
    "WorkflowNotFoundError",
    "WorkflowPayloadError",
    "WorkflowResultTimeoutError",
    "WorkflowSignal",
    "WorkflowStateError",
    "WorkflowTerminatedError",
    "WorkflowTimeoutError",
    "cancel",
    "complete_task",
    "delete",
    "drain",
    "fail_task",
    "fork",
    "get_status",
    "get_value",
    "list_instances",
    "purge",
    "result",
    "resume",
    "retry",
    "schedules",
    "signal",
    "signal_on",
    "start",
    "start_and_wait",
    "start_on",
    "terminate",
    "update",
    "workflow",
]

# The client, the results and the models need Django's app registry: imported on first use,
# so `from django_workflows import workflow` works in a workflows.py that loads during setup.
_LAZY = {
    "start": "client",
    "signal": "client",
    "get_status": "client",
    "get_value": "published",
    "list_instances": "client",
    "cancel": "client",
    "terminate": "client",
    "drain": "worker",
    "result": "client",
    "start_and_wait": "client",
    "resume": "approvals",
    "complete_task": "approvals",
    "fail_task": "approvals",
    "retry": "operations",
    "delete": "operations",
    "fork": "forks",
    "purge": "operations",
    "update": "updates",
    "start_on": "triggers",
    "signal_on": "triggers",
    "Status": "models",
    "StartResult": "results",
    "SignalResult": "results",
    "InstanceStatus": "results",
    "CancelResult": "results",
    "PurgeResult": "results",
    "Wait": "results",
    "JournalEntry": "results",
    "StepLog": "results",
    "WaitOutcome": "results",
    "UpdateResult": "results",
    "Webhook": "engine.webhooks",
}


def __getattr__(name: str) -> Any:
    if name == "schedules":  # the schedules client, a module of its own
        from importlib import import_module

        return import_module(".schedules", __name__)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'django_workflows' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
