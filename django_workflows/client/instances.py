"""The client: start, signal, inspect and cancel instances on the caller's connection.

Inside `transaction.atomic()` every call joins the caller's transaction and commits or rolls
back with it; the local worker is woken with `transaction.on_commit`.
"""

from __future__ import annotations

import time
from typing import Any

from django.db import DatabaseError, connections, transaction

from .. import clock
from ..attributes import conditions as attribute_conditions
from ..conf import database_alias
from ..definitions import Workflow, WorkflowSignal, check_queue
from ..durations import Duration, parse_duration
from ..engine.registry import registry
from ..engine.scope import running_step
from ..engine.starts import (
    StartOptions,
    check_isolation,
    check_key,
    instance_status,
    load_status,
    request_cancel,
    start_instance,
    wake_on_commit,
)
from ..errors import (
    WorkflowError,
    WorkflowFailedError,
    WorkflowNotFoundError,
    WorkflowResultTimeoutError,
)
from ..jsonvalues import check_lookup
from ..models import TAG_LENGTH, Status
from ..results import CancelResult, InstanceStatus, SignalResult, StartResult
from ..store import attributes as searchable
from ..store import instances as store
from ..store import payloads, wakeups
from ..store.deadlocks import retries_deadlocks
from ..store.jsonvalues import to_json
from ..store.published import latest_values
from ..store.signals import record_signal, signal_by_routine
from ..store.streams import heads as stream_heads
from ..store.tables import missing_tables_error
from ..subjects import subject_filter


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
    tags: list[str] | None = None,
    attributes: dict[str, Any] | None = None,
    using: str | None = None,
    subject: Any = None,
    queue: str | None = None,
    debounce: Duration | None = None,
    debounce_timeout: Duration | None = None,
    fair_key: str | None = None,
) -> StartResult:
    """Start an instance, or find the one with this id and input (`created=False`).

    `tags` (with the workflow's static ones) and search `attributes` (str, int, float, bool or
    aware datetime values) are written with the instance, plain even with a codec; an existing
    instance keeps its own.

    Inside a step, an instance started without an id gets one derived from the step (its
    idempotency key, the workflow and the start's place among the step's starts of it), and a
    retried step gets back the instance it started first, whatever the input. `subject`, a
    saved model instance, links the instance to the object it is about (InstanceStatus.subject,
    list_instances(subject=), WorkflowInstance.objects.for_subject()). `queue` overrides the
    workflow's (`@workflow(queue=...)`, "default" unless it names one): a worker started with
    `--queue` claims only its queues' instances.

    `debounce`, with an `id`: the instance starts `debounce` after the last of the starts of
    its id that come while it is pending and has run no step; each of them replaces its input
    (`debounced=True`), until `debounce_timeout` after the first. A start after it began finds
    it (`created=False`, `debounced=False`), whatever its input. The workflow's
    `@workflow(debounce=...)` applies when the start gives none.

    `fair_key` (the workflow's `@workflow(fair_key=...)` of the input unless given): the key
    the instance shares the workers with, a tenant's id say. Among due instances of equal
    priority, claims take the keys in turn: one key's backlog never holds back another's.

    Raises WorkflowNotFoundError for an unknown workflow, WorkflowIdConflictError when the id
    exists with another workflow or input, TypeError for an input that is not JSON, ValueError
    for a bad duration (or a debounce without an id), priority, queue, key or id; TypeError or
    ValueError for a subject that is not a saved model instance, or for bad tags or attributes;
    WorkflowError, saying to run `manage.py migrate`, when the database has no django_workflows
    tables.
    """
    definition = registry.resolve(workflow, version)
    step = running_step.get() if id is None else None
    options = StartOptions(
        id=id if step is None else step.start_id(definition.name),
        repeated=step is not None,
        timeout=timeout,
        priority=priority,
        queue=queue,
        concurrency_key=concurrency_key,
        rate_limit_key=rate_limit_key,
        fair_key=fair_key,
        tags=tags,
        attributes=attributes,
        subject=subject,
        debounce=debounce,
        debounce_timeout=debounce_timeout,
    )
    using = database_alias(using)
    try:
        return start_instance(definition, input, options, using=using)
    except DatabaseError as error:
        unmigrated = missing_tables_error(error, using)
        if unmigrated is None:
            raise
        raise WorkflowError(unmigrated) from error


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
    check_isolation(using, "signal()")

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
                wake_on_commit(using)
            return recorded

    # one call where the database has a routine for it; it wakes the other processes itself
    recorded = signal_by_routine(
        using, name=name, key=key, dedupe_id=id, payload=value, now=clock.now()
    )
    if recorded is None:
        recorded = record(using)
    elif recorded.created:
        wakeups.wake_local_workers_at_commit(using)
    return SignalResult(recorded.id, recorded.created, recorded.woken, recorded.key)


def get_status(
    id: str, *, journal: bool = False, children: bool = False, using: str | None = None
) -> InstanceStatus | None:
    """The instance with its waits (and its journal, and its children), or None for an unknown
    id; ValueError for an id with a NUL or a lone surrogate in it. The journal is the workflow's
    own entries: not the engine's bookkeeping (BOOKKEEPING_KINDS)."""
    check_lookup("The instance id", id)
    return load_status(database_alias(using), id, journal=journal, children=children)


def list_instances(
    *,
    status: str | list[str] | None = None,
    workflow: Workflow | str | None = None,
    version: int | None = None,
    parent_id: str | None = None,
    schedule_id: str | None = None,
    tag: str | None = None,
    attributes: dict[str, Any] | None = None,
    limit: int = 100,
    offset: int = 0,
    using: str | None = None,
    subject: Any = None,
    queue: str | None = None,
    fair_key: str | None = None,
) -> list[InstanceStatus]:
    """Instances matching every filter, oldest first; a page of them. `queue`: those waiting
    in (or run from) that queue. `fair_key`: those of that fair key.

    `subject`: those started with `subject=` this saved model instance. `tag`: instances with
    that tag. `attributes`: a dict of conditions on search attributes, each key an attribute
    name with an optional Django lookup (`exact`, `gt`, `gte`, `lt`, `lte`, `in`, `isnull`), as
    in `{"amount__gte": 1000, "tier": "pro"}`; an int and a float compare as numbers. TypeError
    or ValueError for a subject that is not a saved model instance, a bad tag, lookup, name or
    value.
    """
    using = database_alias(using)
    check_key("tag", tag, using, TAG_LENGTH)
    check_lookup("parent_id", parent_id)
    check_lookup("schedule_id", schedule_id)
    check_lookup("queue", queue)
    check_lookup("fair_key", fair_key)
    check_lookup("The workflow name", workflow)
    conditions = attribute_conditions(attributes) if attributes is not None else None
    statuses = [status] if isinstance(status, str) else list(status) if status else None
    for value in statuses or []:
        if value not in Status.values:
            raise ValueError(f"Unknown status {value!r}; use one of {', '.join(Status.values)}.")
    check_page(limit, offset)
    if queue is not None:
        check_queue(queue)
    name = workflow.name if isinstance(workflow, Workflow) else workflow
    about = None if subject is None else subject_filter(subject, using)
    rows = store.list_instances(
        using,
        statuses=statuses,
        workflow=name,
        version=version,
        parent_id=parent_id,
        schedule_id=schedule_id,
        subject=about,
        tag=tag,
        attributes=conditions,
        queue=queue,
        fair_key=fair_key,
        limit=limit,
        offset=offset,
    )
    # Each table is read for the page's instances that hold rows of it, and not at all when
    # none does.
    holding = store.holding(rows)
    waits = store.load_waits(using, holding["waits"])
    values = latest_values(using, holding["values"], strict=False)
    tags, found = searchable.load(using, tags=holding["tags"], attributes=holding["attributes"])
    streams = stream_heads(using, holding["streams"])
    return [
        instance_status(
            row,
            waits.get(row.id, []),
            strict=False,
            values=values.get(row.id),
            tags=tags.get(row.id),
            attributes=found.get(row.id),
            streams=streams.get(row.id),
        )
        for row, _ in rows
    ]


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


def cancel(id: str, reason: str | None = None, *, using: str | None = None) -> CancelResult:
    """Cancel an unfinished instance: it stops at its next ctx call and runs its compensations.

    `accepted` is False when it had ended, was compensating, or a cancel or terminate was
    requested before. Raises WorkflowNotFoundError for an unknown id.
    """
    return request_cancel(id, reason, terminate=False, using=using)


def terminate(id: str, reason: str | None = None, *, using: str | None = None) -> CancelResult:
    """Stop an instance without running its compensations; it ends `cancelled`.

    Raises WorkflowNotFoundError for an unknown id.
    """
    return request_cancel(id, reason, terminate=True, using=using)


_FAILED_ENDS = (Status.FAILED, Status.CANCELLED, Status.COMPENSATION_FAILED)


def result(id: str, *, timeout: Duration | None = None, using: str | None = None) -> Any:
    """Wait for the instance to end, whichever process runs it, and return its output.

    Raises WorkflowNotFoundError for an unknown id, WorkflowFailedError (with `status` and the
    instance's error as `cause`) for one that failed or was cancelled, and
    WorkflowResultTimeoutError past `timeout` (wall-clock; the instance keeps running).
    """
    check_lookup("The instance id", id)
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
                raise result_timeout(id, limit)
            if listen():  # from the first wait on: on PostgreSQL, a NOTIFY at its end wakes it
                store.mark_awaited(using, id)
            wakeups.wait_for_end(id, pause if limit is None else min(pause, limit - waited))
            pause = min(pause * 2, 1.0)


def result_timeout(id: str, limit: float) -> WorkflowResultTimeoutError:
    """The error of result() and aresult() waiting `limit` seconds for an instance that runs on."""
    return WorkflowResultTimeoutError(
        f"Instance {id!r} did not end within {limit:g}s; it keeps running.",
        instance_id=id,
        timeout=limit,
    )


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
