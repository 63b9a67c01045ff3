"""What an operator does to instances: retry a failed one, delete one, purge the old ones."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction

from .. import clock
from ..conf import database_alias
from ..durations import Duration, parse_duration
from ..engine import journal
from ..engine.children import close_children, end_signal
from ..engine.externaltasks import GIVEN_BACK, TASK_PREFIX
from ..engine.starts import wake_on_commit
from ..errors import WorkflowNotFoundError, WorkflowStateError
from ..events import emit
from ..jsonvalues import check_lookup
from ..models import FINISHED, UNFINISHED, Status, WorkflowInstance
from ..results import InstanceStatus, PurgeResult
from ..store import instances as store
from ..store import maintenance, payloads
from ..store import workers as worker_registry
from ..store.signals import record_signal
from .instances import get_status

UNSET: Any = object()
"""retry()'s `timeout` when not given: the instance keeps its deadline."""

_RETRYABLE = (Status.FAILED, Status.COMPENSATION_FAILED)
GONE_WORKERS_KEPT = timedelta(days=1)


def cancel_refusal(row: WorkflowInstance | InstanceStatus, terminate: bool) -> str | None:
    """Why a cancel (or terminate) of this instance (its row, or its status) is not accepted;
    None when it would be. The admin's and the command line's refusals both read it."""
    if row.status in FINISHED:
        what = "terminated" if terminate else "cancelled"
        return f"{row.id} is {row.status}: only unfinished instances can be {what}."
    if row.terminate_requested:
        return f"{row.id} is being terminated already."
    if not terminate and row.cancel_requested:
        return f"{row.id} is being cancelled already."
    if not terminate and row.status == Status.COMPENSATING:
        return f"{row.id} is compensating: its undo is under way (terminate stops it)."
    return None


"""How long purge() keeps the registry row of a worker process that is gone (killed)."""


def retry(id: str, *, timeout: Duration | None = UNSET, using: str | None = None) -> InstanceStatus:
    """Run a `failed` instance again from its journal, or a `compensation_failed` one's
    compensations that did not complete. `timeout` sets a new run timeout from now (None: none).

    Raises WorkflowNotFoundError for an unknown id (also one deleted right after the retry
    committed), and WorkflowStateError for another status, an instance whose compensations
    ran, or when another change races this one; ValueError for an id with a NUL or a lone
    surrogate in it.
    """
    check_lookup("The instance id", id)
    using = database_alias(using)
    row = store.get_instance(using, id)
    if row is None:
        raise WorkflowNotFoundError(f"No workflow instance has the id {id!r}.")
    if row.status not in _RETRYABLE:
        raise WorkflowStateError(
            f"Instance {id!r} is {row.status}: only failed and compensation_failed instances "
            f"can be retried."
        )
    payloads.decode_instance(row)  # WorkflowPayloadError when the codec cannot read it
    now = clock.now()
    entries: dict[str, dict[str, Any]] = {}
    drop: list[str] = []
    loaded = store.load_journal(using, id)
    error = row.error or {}
    for name, doc in loaded:
        kind, status = doc.get("kind"), doc.get("status")
        if kind == "step" and _is_dispatch(name):
            # A task's attempt: one its run stopped in runs again as the same attempt; one
            # that raised is given back below, as its task's.
            if row.status == Status.FAILED and status == journal.CANCELLED:
                entries[name] = {**_attempts_back(doc), "attempt": (doc.get("attempt") or 1) - 1}
            continue
        if row.status == Status.FAILED:
            if kind == "compensation":
                raise WorkflowStateError(
                    f"Instance {id!r} ran its compensations: resuming it would build on undone "
                    f"work. Start a new instance instead."
                )
            if kind == "step" and status in (journal.FAILED, journal.CANCELLED):
                entries[name] = _attempts_back(doc)
            elif status in (journal.PENDING, journal.CANCELLED) and (
                kind in ("sleep", "wait") or (kind == "child" and name.startswith("$result:"))
            ):
                drop.append(name)  # sleeps and waits it left start over, a child's end's too
        elif kind == "compensation" and status != journal.COMPLETED:
            entries[name] = _attempts_back(doc)
    if row.status == Status.FAILED and isinstance(error.get("step"), str):
        entries.update(_task_attempts_back(loaded, error["step"]))
    past_deadline = row.deadline is not None and row.deadline <= now
    if (
        row.status == Status.FAILED
        and (error.get("name") == "WorkflowTimeoutError" or past_deadline)
        and timeout is UNSET
    ):
        raise WorkflowStateError(
            f"Instance {id!r} ran past its run timeout: retry it with a new timeout "
            f"(timeout=..., counted from now, or None for none)."
        )
    retries = sum(1 for _, doc in loaded if doc.get("kind") == "retry")
    entries[f"$retry:{retries + 1}"] = {
        "kind": "retry",
        "status": journal.COMPLETED,
        "result": {"status": row.status, "error": row.error},
        "finished_at": journal.timestamp(now),
    }
    if row.status == Status.FAILED:
        status, new_error = Status.PENDING, None
    else:  # the undo goes on, for the reason it started
        status = Status.COMPENSATING
        new_error = {k: v for k, v in error.items() if k != "compensation"}
    deadline: Any = UNSET
    if timeout is not UNSET:
        deadline = None if timeout is None else now + parse_duration(timeout, "timeout")
    change = maintenance.Reopen(
        expect_status=row.status,
        expect_runs=row.runs,
        status=status,
        error=new_error,
        entries=entries,
        drop_entries=drop,
        now=now,
        deadline=deadline,
    )
    with transaction.atomic(using=using, savepoint=False):
        if not maintenance.reopen(using, id, change, keep_deadline=UNSET):
            raise WorkflowStateError(f"Instance {id!r} changed while it was being retried.")
        wake_on_commit(using)
    emit(
        "workflow-retried",
        id=id,
        workflow=row.workflow,
        version=row.version,
        at=now,
        **{"from": row.status, "error": row.error},
    )
    result = get_status(id, using=using)
    if result is None:  # a delete() committed between the retry's commit and this read
        raise WorkflowNotFoundError(
            f"Instance {id!r} was deleted right after it was retried: it no longer exists."
        )
    return result


def _attempts_back(doc: dict[str, Any]) -> dict[str, Any]:
    """The entry of a step (or compensation) that gave up, with its attempts back."""
    return {
        **doc,
        "status": journal.PENDING,
        "attempt": 0,
        "retry_at": None,
        "finished_at": None,
        "error": doc.get("error"),
    }


def _is_dispatch(name: str) -> bool:
    return name.startswith(TASK_PREFIX) and name.endswith(":dispatch")


def _task_attempts_back(
    loaded: list[tuple[str, dict[str, Any]]], task: str
) -> dict[str, dict[str, Any]]:
    """The entry of the last attempt of the task `task` (if the instance failed at a task
    of that name), marked so that ctx.task() dispatches the next attempt at once and its
    policy counts from there: its dispatch when that raised, else its wait."""
    prefix = f"{TASK_PREFIX}{task}#"
    last: dict[int, dict[str, tuple[str, dict[str, Any]]]] = {}
    for name, doc in loaded:
        if not name.startswith(prefix):
            continue
        number, _, suffix = name[len(prefix) :].partition(":")
        if number.isdigit():
            last.setdefault(int(number), {})[suffix] = (name, doc)
    if not last:
        return {}
    attempt = last[max(last)]
    dispatch, wait = attempt.get("dispatch"), attempt.get("")
    if dispatch is not None and dispatch[1].get("status") == journal.FAILED:
        name, doc = dispatch
    elif wait is not None and wait[1].get("status") == journal.COMPLETED and "retry" not in attempt:
        name, doc = wait
    else:
        return {}
    return {name: {**doc, GIVEN_BACK: True}}


def delete(id: str, *, force: bool = False, using: str | None = None) -> bool:
    """Delete a finished instance with its journal; an unfinished one only with `force`,
    without running its compensations (its children still get their `parent_close`).
    Returns True once deleted.

    Raises WorkflowNotFoundError for an unknown id, and WorkflowStateError for an unfinished
    instance without `force` or when another change races this one; ValueError for an id with
    a NUL or a lone surrogate in it.
    """
    check_lookup("The instance id", id)
    using = database_alias(using)
    row = store.get_instance(using, id)
    if row is None:
        raise WorkflowNotFoundError(f"No workflow instance has the id {id!r}.")
    statuses: list[str] = [*FINISHED, *UNFINISHED] if force else list(FINISHED)
    if row.status not in statuses:
        raise WorkflowStateError(
            f"Instance {id!r} is {row.status}: delete an unfinished instance with force=True "
            f"(its compensations do not run)."
        )
    with transaction.atomic(using=using):
        deleted = maintenance.delete_instance(using, id, statuses)
        if deleted in UNFINISHED and row.parent_id:
            # A child deleted before it ended: its parent's wait ends with WorkflowDeletedError.
            error = {
                "name": "WorkflowDeletedError",
                "message": f"Instance {id!r} was deleted while {deleted}, before it ended.",
            }
            record_signal(
                using, **end_signal(row, deleted, None, error), now=clock.now(), locked=False
            )
        if deleted in UNFINISHED:
            # Its children get their parent_close, as for any end.
            close_children(using, id, why=f"Its parent {id!r} was deleted while {deleted}.")
    if deleted is None:
        raise WorkflowStateError(f"Instance {id!r} changed while it was being deleted.")
    emit(
        "workflow-deleted",
        id=id,
        workflow=row.workflow,
        version=row.version,
        at=clock.now(),
        status=deleted,
    )
    return True


def purge(
    *,
    older_than: Duration,
    status: str | list[str] | None = None,
    batch_size: int = 500,
    using: str | None = None,
) -> PurgeResult:
    """Delete the instances that finished more than `older_than` ago (by default completed,
    failed and cancelled ones; compensation_failed only when listed), the signals no unfinished
    instance can take any more, and the rate-limit windows that ended, a batch at a time; and
    the registry rows of worker processes gone for more than a day."""
    using = database_alias(using)
    age = parse_duration(older_than, "older_than")
    statuses: list[str] = (
        [Status.COMPLETED, Status.FAILED, Status.CANCELLED]
        if status is None
        else [status]
        if isinstance(status, str)
        else list(status)
    )
    if not statuses:
        raise ValueError("purge() needs at least one status.")
    for value in statuses:
        if value not in FINISHED:
            raise ValueError(
                f"purge() deletes finished instances only; {value!r} is not one of "
                f"{', '.join(FINISHED)}."
            )
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, not {batch_size!r}.")
    before = clock.now() - age
    totals = [0, 0, 0]
    while True:
        batch = maintenance.purge(using, statuses=statuses, before=before, limit=batch_size)
        counts = (batch.instances, batch.signals, batch.rate_limits)
        totals = [total + count for total, count in zip(totals, counts, strict=True)]
        if max(counts) < batch_size:
            workers = worker_registry.purge_gone(using, before=clock.now() - GONE_WORKERS_KEPT)
            return PurgeResult(totals[0], totals[1], totals[2], workers)
