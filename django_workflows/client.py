"""The client: start, signal, inspect and cancel instances on the caller's connection.

Inside `transaction.atomic()` every call joins the caller's transaction and commits or rolls
back with it; the local worker is woken with `transaction.on_commit`.
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime
from typing import Any

from django.db import connections, transaction

from . import clock, wakeups
from .conf import database_alias
from .definitions import Workflow, WorkflowSignal, check_priority
from .durations import Duration, parse_duration
from .engine.context import running_step
from .errors import (
    WorkflowFailedError,
    WorkflowIdConflictError,
    WorkflowNotFoundError,
    WorkflowResultTimeoutError,
)
from .jsonvalues import MAX_MESSAGE, check_text
from .models import KEY_LENGTH, Status, WorkflowInstance
from .registry import registry
from .results import (
    CancelResult,
    InstanceStatus,
    JournalEntry,
    SignalResult,
    StartResult,
    Wait,
)
from .schedules.ids import is_occurrence_id
from .store import instances as store
from .store import payloads
from .store.backends import backend
from .store.deadlocks import retries_deadlocks
from .store.signals import record_signal
from .store.values import to_json


def check_key(what: str, value: str | None, using: str, max_length: int = KEY_LENGTH) -> None:
    """Refuse an id, name or key longer than its column, or with a NUL or a lone surrogate in
    it, before any SQL, on every database: PostgreSQL and MySQL would refuse it
    mid-transaction, and SQLite would keep it."""
    if value is None:
        return
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, not {type(value).__name__}.")
    if len(value) > max_length:
        raise ValueError(
            f"{what} is {len(value)} characters long; the most it can be is {max_length}."
        )
    check_text(what, value)


def _wake_on_commit(using: str) -> None:
    """Wake this process's workers at commit, and on PostgreSQL the other processes' too."""
    backend(using).notify()
    transaction.on_commit(wakeups.wake_local_workers, using=using)


def start(
    workflow: Workflow | str,
    input: Any = None,
    *,
    id: str | None = None,
    version: int | None = None,
    timeout: Duration | None = None,
    priority: int | None = None,
    concurrency_key: str | None = None,
    rate_limit_key: str | None = None,
    using: str | None = None,
) -> StartResult:
    """Start an instance, or find the one with this id and input (`created=False`).

    Inside a step, an instance started without an id gets one derived from the step (its
    idempotency key, the workflow and the start's place among the step's starts of it), and a
    retried step gets back the instance it started first, whatever the input.

    Raises WorkflowNotFoundError for an unknown workflow, WorkflowIdConflictError when the id
    exists with another workflow or input, TypeError for an input that is not JSON, ValueError
    for a bad duration, priority, key or id.
    """
    definition = registry.resolve(workflow, version)
    step = running_step.get() if id is None else None
    return start_instance(
        definition,
        input,
        id=id if step is None else step.start_id(definition.name),
        repeated=step is not None,
        timeout=timeout,
        priority=priority,
        concurrency_key=concurrency_key,
        rate_limit_key=rate_limit_key,
        using=database_alias(using),
    )


def start_instance(
    definition: Workflow,
    input: Any,
    *,
    id: str | None,
    using: str,
    timeout: Duration | None = None,
    priority: int | None = None,
    concurrency_key: str | None = None,
    rate_limit_key: str | None = None,
    schedule_id: str | None = None,
    scheduled_at: datetime | None = None,
    parent_id: str | None = None,
    parent_close: str | None = None,
    repeated: bool = False,
) -> StartResult:
    """start() of a resolved definition; a schedule's occurrence passes its id and time too,
    a child its parent's id and what becomes of it when the parent ends. `repeated`: the id
    is a step's, whose repeat gets the instance back whatever its input."""
    value = to_json(input, f'The input of workflow "{definition.name}"', using=using)
    if id is None:
        id = str(uuid.uuid4())
    check_key("The instance id", id, using)
    if not id:
        raise ValueError("The instance id must not be empty.")
    if schedule_id is None and is_occurrence_id(id):
        raise ValueError(
            f"The instance id {id!r} has the form of a schedule occurrence's, "
            f"<schedule id>@<time>, which only that occurrence's instance takes: use another id."
        )
    check_priority(priority)
    run_timeout = definition.timeout if timeout is None else parse_duration(timeout, "timeout")
    concurrency_key = _key(definition, "concurrency", concurrency_key, value)
    rate_limit_key = _key(definition, "rate_limit", rate_limit_key, value)
    check_key("concurrency_key", concurrency_key, using)
    check_key("rate_limit_key", rate_limit_key, using)
    now = clock.now()
    instance = WorkflowInstance(
        id=id,
        workflow=definition.name,
        version=definition.version,
        status=Status.PENDING,
        input=value,
        wake_at=now,
        deadline=None if run_timeout is None else now + run_timeout,
        priority=priority or 0,
        concurrency_key=concurrency_key,
        rate_limit_key=rate_limit_key,
        schedule_id=schedule_id,
        scheduled_at=scheduled_at,
        parent_id=parent_id,
        parent_close=parent_close,
        created_at=now,
        updated_at=now,
    )

    @retries_deadlocks
    def create(using: str) -> tuple[WorkflowInstance, bool]:
        with transaction.atomic(using=using, savepoint=False):
            stored, created = store.create_instance(using, instance)
            if created:
                _wake_on_commit(using)
            return stored, created

    payloads.encode_instance(instance)
    stored, created = create(using)
    if not created and (
        stored.workflow != definition.name
        or stored.parent_id != parent_id
        or stored.schedule_id != schedule_id  # an occurrence's instance is its schedule's own
        or (
            not repeated
            and payloads.decode_value("input", stored.input, payloads.instance_at(id, "input"))
            != value
        )
    ):
        raise WorkflowIdConflictError(
            f"Instance {id!r} exists already, of workflow {stored.workflow!r} with another "
            f"input{' or parent' if stored.parent_id or parent_id else ''}. Start it with the same "
            f"workflow and input to get it back, or use another id."
        )
    return StartResult(stored.id, stored.workflow, stored.version, created, Status(stored.status))


def _key(definition: Workflow, kind: str, given: str | None, input: Any) -> str | None:
    limits = definition.concurrency if kind == "concurrency" else definition.rate_limit
    keyed = [limit for limit in limits if limit.key is not None]
    if given is not None:
        if not keyed:
            raise ValueError(
                f"{kind}_key was given, but workflow {definition.name!r} has no {kind} limit with a key."
            )
        return given
    if not keyed:
        return None
    key = keyed[0].key(input)  # type: ignore[misc]
    if key is not None and not isinstance(key, str):
        raise TypeError(
            f"The {kind} key function of workflow {definition.name!r} must return a string."
        )
    return key


def signal(
    signal: WorkflowSignal | str,
    payload: Any = None,
    *,
    key: str | None = None,
    id: str | None = None,
    using: str | None = None,
) -> SignalResult:
    """Record a signal and wake the instances waiting for it with exactly this key.

    With `id`, a signal with the same name and id is stored once (`created=False` after).
    Inside a step, a signal without an id gets one derived from the step (its idempotency key
    and the signal's place among the step's signals with that name and key): a retried step's
    signals are stored once. Send them in a fixed order.
    On PostgreSQL, refused with TypeError inside a transaction stricter than READ COMMITTED.
    """
    using = database_alias(using)
    name = signal.name if isinstance(signal, WorkflowSignal) else signal
    if not isinstance(name, str) or not name:
        raise TypeError(f"Expected a WorkflowSignal or a signal name, got {signal!r}.")
    if name.startswith("$"):
        raise ValueError(f"Signal names starting with '$' are the engine's own, not {name!r}.")
    check_key("The signal name", name, using)
    check_key("The signal key", key, using)
    check_key("The signal id", id, using)
    value = to_json(payload, f'The payload of signal "{name}"', using=using)
    connection = connections[using]
    if connection.in_atomic_block:
        isolation = backend(using).transaction_isolation()
        if isolation is not None and isolation != "read committed":
            raise TypeError(
                f"signal() inside a {isolation.upper()} transaction could miss waits committed "
                f"after the transaction's snapshot: send it in a READ COMMITTED transaction."
            )

    step = running_step.get() if id is None else None
    if step is not None:
        id = step.signal_id(name, key)

    @retries_deadlocks
    def record(using: str) -> Any:
        with transaction.atomic(using=using, savepoint=False):
            recorded = record_signal(
                using, name=name, key=key, dedupe_id=id, payload=value, now=clock.now()
            )
            if recorded.created:
                _wake_on_commit(using)
            return recorded

    recorded = record(using)
    return SignalResult(recorded.id, recorded.created, recorded.woken, recorded.key)


def _journal_entry(name: str, doc: dict[str, Any]) -> JournalEntry:
    started, finished = doc.get("started_at"), doc.get("finished_at")
    return JournalEntry(
        name=name,
        kind=doc.get("kind", "step"),
        status=doc.get("status", ""),
        attempt=doc.get("attempt"),
        result=doc.get("result"),
        error=doc.get("error"),
        started_at=datetime.fromisoformat(started) if started else None,
        finished_at=datetime.fromisoformat(finished) if finished else None,
    )


def _status(
    row: WorkflowInstance,
    waits: list[tuple[str, str | None]],
    journal: list[tuple[str, dict[str, Any]]] | None = None,
    children: list[InstanceStatus] | None = None,
    *,
    strict: bool = True,
) -> InstanceStatus:
    """The row as the client returns it, its payloads decoded. Not strict: a payload the codec
    cannot read is None (list_instances() shows such an instance without its payloads)."""
    payloads.decode_instance(row, strict=strict)
    return InstanceStatus(
        id=row.id,
        workflow=row.workflow,
        version=row.version,
        status=row.status,
        input=row.input,
        output=row.output,
        error=row.error,
        custom_status=row.custom_status,
        wake_at=row.wake_at,
        deadline=row.deadline,
        priority=row.priority or None,
        parent_id=row.parent_id,
        schedule_id=row.schedule_id,
        scheduled_at=row.scheduled_at,
        runs=row.runs,
        created_at=row.created_at,
        updated_at=row.updated_at,
        lease_owner=row.lease_owner,
        cancel_requested=row.cancel_requested,
        terminate_requested=row.terminate_requested,
        waits=[Wait(signal, key) for signal, key in waits],
        journal=None if journal is None else [_journal_entry(n, d) for n, d in journal],
        children=children,
    )


def get_status(
    id: str, *, journal: bool = False, children: bool = False, using: str | None = None
) -> InstanceStatus | None:
    """The instance with its waits (and its journal, and its children), or None for an unknown id."""
    using = database_alias(using)
    row = store.get_instance(using, id)
    if row is None:
        return None
    waits = store.load_waits(using, [id]).get(id, [])
    entries = store.load_journal(using, id) if journal else None
    kids = None
    if children:
        rows = store.list_instances(using, parent_id=id, limit=10_000)
        kid_waits = store.load_waits(using, [r.id for r in rows])
        kids = [_status(r, kid_waits.get(r.id, []), strict=False) for r in rows]
    return _status(row, waits, entries, kids)


def list_instances(
    *,
    status: str | list[str] | None = None,
    workflow: Workflow | str | None = None,
    version: int | None = None,
    parent_id: str | None = None,
    schedule_id: str | None = None,
    limit: int = 100,
    offset: int = 0,
    using: str | None = None,
) -> list[InstanceStatus]:
    """Instances matching every filter, oldest first; a page of them."""
    using = database_alias(using)
    statuses = [status] if isinstance(status, str) else list(status) if status else None
    for value in statuses or []:
        if value not in Status.values:
            raise ValueError(f"Unknown status {value!r}; use one of {', '.join(Status.values)}.")
    check_page(limit, offset)
    name = workflow.name if isinstance(workflow, Workflow) else workflow
    rows = store.list_instances(
        using,
        statuses=statuses,
        workflow=name,
        version=version,
        parent_id=parent_id,
        schedule_id=schedule_id,
        limit=limit,
        offset=offset,
    )
    waits = store.load_waits(using, [r.id for r in rows])
    return [_status(r, waits.get(r.id, []), strict=False) for r in rows]


MAX_PAGE = 10_000
"""The most instances list_instances() returns at once."""
MAX_OFFSET = 2**63 - 1  # what every database's OFFSET takes (a signed 64-bit integer)


def check_page(limit: Any, offset: Any) -> None:
    """Refuse a page size that is not an integer from 1 to MAX_PAGE, or an offset that is not
    one from 0 to 2**63 - 1, with ValueError naming it."""
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"limit must be an integer from 1 to {MAX_PAGE}, not {limit!r}.")
    if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset <= MAX_OFFSET:
        raise ValueError(f"offset must be an integer from 0 to 2**63 - 1, not {offset!r}.")


def _request(id: str, reason: str | None, terminate: bool, using: str | None) -> CancelResult:
    using = database_alias(using)
    if reason is not None:
        if not isinstance(reason, str):
            raise TypeError(f"The reason must be a string, not {type(reason).__name__}.")
        if len(reason) > MAX_MESSAGE:
            raise ValueError(
                f"The reason is {len(reason)} characters long; the most it can be is {MAX_MESSAGE}."
            )
        check_text("The reason", reason)
    with transaction.atomic(using=using, savepoint=False):
        accepted = store.request_cancel(
            using, id, reason=reason, now=clock.now(), terminate=terminate
        )
        if accepted:
            _wake_on_commit(using)
            transaction.on_commit(
                lambda: wakeups.cancel_requested(id, terminate=terminate, reason=reason),
                using=using,
            )
    row = store.get_instance(using, id)
    if row is None:
        raise WorkflowNotFoundError(f"No workflow instance has the id {id!r}.")
    # Not strict: an instance whose payloads the codec cannot read can still be cancelled.
    return CancelResult(
        accepted, _status(row, store.load_waits(using, [id]).get(id, []), strict=False)
    )


def cancel(id: str, reason: str | None = None, *, using: str | None = None) -> CancelResult:
    """Cancel an unfinished instance: it stops at its next ctx call and runs its compensations.

    `accepted` is False when it had ended, was compensating, or a cancel or terminate was
    requested before. Raises WorkflowNotFoundError for an unknown id.
    """
    return _request(id, reason, False, using)


def terminate(id: str, reason: str | None = None, *, using: str | None = None) -> CancelResult:
    """Stop an instance without running its compensations; it ends `cancelled`.

    Raises WorkflowNotFoundError for an unknown id.
    """
    return _request(id, reason, True, using)


_FAILED_ENDS = (Status.FAILED, Status.CANCELLED, Status.COMPENSATION_FAILED)


def result(id: str, *, timeout: Duration | None = None, using: str | None = None) -> Any:
    """Wait for the instance to end, whichever process runs it, and return its output.

    Raises WorkflowNotFoundError for an unknown id, WorkflowFailedError (with `status` and the
    instance's error as `cause`) for one that failed or was cancelled, and
    WorkflowResultTimeoutError past `timeout` (wall-clock; the instance keeps running).
    """
    using = database_alias(using)
    limit = None if timeout is None else parse_duration(timeout, "timeout").total_seconds()
    started = time.monotonic()
    pause = 0.02
    with wakeups.ends_listener(using) as listen:
        while True:
            row = store.get_instance(using, id)
            if row is None:
                raise WorkflowNotFoundError(f"No workflow instance has the id {id!r}.")
            if row.status == Status.COMPLETED:
                return payloads.decode_value(
                    "output", row.output, payloads.instance_at(id, "output")
                )
            if row.status in _FAILED_ENDS:
                error = payloads.decode_value("error", row.error, payloads.instance_at(id, "error"))
                error = error or {}
                raise WorkflowFailedError(
                    f"Instance {id!r} ended {row.status}: {error.get('message', '')}",
                    instance_id=id,
                    status=row.status,
                    cause=error,
                )
            waited = time.monotonic() - started
            if limit is not None and waited >= limit:
                raise WorkflowResultTimeoutError(
                    f"Instance {id!r} did not end within {limit:g}s; it keeps running.",
                    instance_id=id,
                    timeout=limit,
                )
            if listen():  # from the first wait on: on PostgreSQL, a NOTIFY at its end wakes it
                store.mark_awaited(using, id)
            wakeups.wait_for_end(id, pause if limit is None else min(pause, limit - waited))
            pause = min(pause * 2, 1.0)


def start_and_wait(
    workflow: Workflow | str,
    input: Any = None,
    *,
    wait_timeout: Duration | None = None,
    using: str | None = None,
    **start_options: Any,
) -> Any:
    """start(), then result(): the output of the instance with this id, new or existing.

    Refused with TypeError inside transaction.atomic(): the instance exists only once the
    transaction commits. Call start() in the transaction, and result() after the commit.
    """
    using = database_alias(using)
    if connections[using].in_atomic_block:
        raise TypeError(
            "start_and_wait() cannot run inside transaction.atomic(): the instance only exists "
            "once the transaction commits. Call start() in the transaction and result() after."
        )
    started = start(workflow, input, using=using, **start_options)
    return result(started.id, timeout=wait_timeout, using=using)
