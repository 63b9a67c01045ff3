"""Creating an instance, checking a key and requesting a cancel: what the client and the
engine both do (a parent starts and cancels its children), below both of them; and a row as
the client returns it (instance_status), which a cancel returns too.

The client's start(), cancel() and terminate() and the engine's children call these; so does a
schedule's occurrence. Every write joins the caller's transaction and wakes the workers at commit.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connections, transaction

from .. import clock
from ..attributes import check_attributes, check_tags
from ..conf import database_alias
from ..definitions import Workflow, check_debounce, check_priority, check_queue
from ..durations import Duration, parse_duration
from ..errors import WorkflowIdConflictError, WorkflowNotFoundError
from ..jsonvalues import MAX_MESSAGE, check_lookup, check_text
from ..middleware import headers_entry, start_headers
from ..models import KEY_LENGTH, Status, WorkflowInstance
from ..results import CancelResult, InstanceStatus, JournalEntry, StartResult, StepLog, Wait
from ..schedules.ids import is_occurrence_id
from ..store import attributes as searchable
from ..store import instances as store
from ..store import payloads, wakeups
from ..store.backends import backend
from ..store.deadlocks import retries_deadlocks
from ..store.jsonvalues import to_json
from ..store.published import latest_values
from ..store.streams import heads as stream_heads
from ..subjects import subject_key, subject_label
from .journal import BOOKKEEPING_KINDS


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


def check_isolation(using: str, what: str) -> None:
    """Refuse (TypeError) to record a signal inside a transaction stricter than READ COMMITTED
    (PostgreSQL's REPEATABLE READ or SERIALIZABLE), whose snapshot could miss a wait committed
    after it: the instance would not wake. `what` names the call, as in "signal()"."""
    if connections[using].in_atomic_block:
        isolation = backend(using).transaction_isolation()
        if isolation is not None and isolation != "read committed":
            raise TypeError(
                f"{what} inside a {isolation.upper()} transaction could miss waits committed "
                f"after the transaction's snapshot: send it in a READ COMMITTED transaction."
            )


def wake_on_commit(using: str) -> None:
    """Wake this process's workers at commit, and on PostgreSQL the other processes' too."""
    backend(using).notify()
    transaction.on_commit(wakeups.wake_local_workers, using=using)


@dataclass(frozen=True)
class StartOptions:
    """How an instance starts, beside its workflow and input: what start() takes, and what the
    engine's own starts add (a child, a schedule's occurrence, a Django task). None leaves the
    workflow's own setting or the default.

    `id`: a new UUID when None. `repeated`: the id is a step's, whose repeat gets the instance
    back whatever its input. `subject`: the saved model instance it is about (an existing
    instance keeps the subject it was started with). `tags` (with the definition's own) and
    `attributes` are written with a created instance only. `queue`: the definition's unless
    given. `schedule_id` and `scheduled_at`: a schedule's occurrence. `parent_id` and
    `parent_close`: a child's parent and what becomes of the child when the parent ends.
    `wake_at`: the first time a worker may claim it (a Django task's run_after), now unless
    given. `fair_key`: the definition's function of the input gives it unless given.
    `debounce` and `debounce_timeout`: start()'s, for an instance with an `id` that is
    not `repeated` (the definition's own when both are None)."""

    id: str | None = None
    timeout: Duration | None = None
    priority: int | None = None
    queue: str | None = None
    concurrency_key: str | None = None
    rate_limit_key: str | None = None
    fair_key: str | None = None
    tags: Any = None
    attributes: Any = None
    subject: Any = None
    repeated: bool = False
    schedule_id: str | None = None
    scheduled_at: datetime | None = None
    parent_id: str | None = None
    parent_close: str | None = None
    wake_at: datetime | None = None
    debounce: Duration | None = None
    debounce_timeout: Duration | None = None


@dataclass
class NewInstance:
    """An instance about to be created, checked and encoded: its row, the JSON of its input,
    and what is written with it (its tags, search attributes and first journal entries).
    `debounce`: its quiet time and longest wait, for a debounced start."""

    instance: WorkflowInstance
    value: Any
    tags: list[str]
    attributes: dict[str, Any]
    entries: dict[str, dict[str, Any]]
    debounce: tuple[timedelta, timedelta | None] | None = None

    @property
    def alone(self) -> bool:
        """Whether nothing is written or read beside its row: store.start_alone() can start it
        in one statement."""
        return not (
            self.tags
            or self.attributes
            or self.entries
            or self.debounce
            or self.instance.fair_key is not None
        )


def new_instance(
    definition: Workflow, input: Any, options: StartOptions, *, using: str
) -> NewInstance:
    """What start_instance() creates, checked and encoded, before any write (the arguments are
    start_instance()'s): raises as start_instance() does for an argument it refuses."""
    id, priority, queue = options.id, options.priority, options.queue
    tags, attributes, subject = options.tags, options.attributes, options.subject
    schedule_id = options.schedule_id
    value = to_json(input, f'The input of workflow "{definition.name}"', using=using)
    merged = check_tags(tags, static=definition.tags) if tags is not None or definition.tags else []
    # Checked here, before any SQL: the caller's transaction stays usable when one is refused.
    searchable_values: dict[str, Any] = (
        check_attributes(attributes) if attributes is not None else {}
    )
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
    debounce = _debounce(definition, options)
    check_priority(priority)
    if queue is None:
        queue = definition.queue
    else:
        check_queue(queue)
    run_timeout = (
        definition.timeout
        if options.timeout is None
        else parse_duration(options.timeout, "timeout")
    )
    concurrency_key = limit_key(definition, "concurrency", options.concurrency_key, value)
    rate_limit_key = limit_key(definition, "rate_limit", options.rate_limit_key, value)
    check_key("concurrency_key", concurrency_key, using)
    check_key("rate_limit_key", rate_limit_key, using)
    fair_key = fair_key_of(definition, options.fair_key, value)
    check_key("fair_key", fair_key, using)
    # Last of the checks: its content type lookup may query (a SELECT, before the INSERT).
    subject_type, subject_id = (None, None) if subject is None else subject_key(subject, using)
    check_key("The subject's primary key", subject_id, using)
    now = clock.now()
    instance = new_row(
        id=id,
        workflow=definition.name,
        version=definition.version,
        status=Status.PENDING,
        input=value,
        wake_at=(
            now + debounce[0]
            if debounce is not None
            else now
            if options.wake_at is None
            else options.wake_at
        ),
        deadline=None if run_timeout is None else now + run_timeout,
        priority=priority or 0,
        queue=queue,
        concurrency_key=concurrency_key,
        rate_limit_key=rate_limit_key,
        fair_key=fair_key,
        schedule_id=schedule_id,
        scheduled_at=options.scheduled_at,
        parent_id=options.parent_id,
        parent_close=options.parent_close,
        subject_type_id=None if subject_type is None else subject_type.pk,
        subject_id=subject_id,
        created_at=now,
        updated_at=now,
    )
    # STEP_MIDDLEWARE's process_start(): the caller's trace context, stored with the instance.
    headers = headers_entry(start_headers(id, definition.name, definition.version))
    instance.has_headers = bool(headers)
    payloads.encode_instance(instance)
    return NewInstance(instance, value, merged, searchable_values, headers, debounce)


_FIELDS = WorkflowInstance._meta.concrete_fields
_DEFAULTS = {field.attname: field.get_default() for field in _FIELDS}
"""Every field's default, by its attname (no field's default is a callable: tests/core)."""


def new_row(**values: Any) -> WorkflowInstance:
    """WorkflowInstance(**values) for `values` by attname, every other field at its default,
    made with its fields in order: Model.__init__ spends 18 us matching twenty keywords to the
    fields and their defaults, 7 us taking the values in order (about 3% of a start()'s CPU).
    TypeError for a name that is no field's attname, as the model's own constructor raises."""
    unknown = values.keys() - _DEFAULTS.keys()
    if unknown:
        raise TypeError(f"WorkflowInstance has no field {', '.join(sorted(unknown))}.")
    given = {**_DEFAULTS, **values}
    row = [given[field.attname] for field in _FIELDS]
    return WorkflowInstance(*row)  # type: ignore[misc]  # the stubs take a starred list for the id


def start_instance(
    definition: Workflow, input: Any, options: StartOptions, *, using: str
) -> StartResult:
    """start() of a resolved definition, with its `options` (StartOptions)."""
    new = new_instance(definition, input, options, using=using)
    id = new.instance.pk
    stored, created, debounced = _create(using, new)
    if not created and (
        stored.workflow != definition.name
        or stored.parent_id != options.parent_id
        # an occurrence's instance is its schedule's own
        or stored.schedule_id != options.schedule_id
        or (
            # A debounced start's input is meant to change: it never conflicts.
            not options.repeated
            and new.debounce is None
            and payloads.decode_value("input", stored.input, payloads.instance_at(id, "input"))
            != new.value
        )
    ):
        raise WorkflowIdConflictError(
            f"Instance {id!r} exists already, of workflow {stored.workflow!r} with another "
            f"input{' or parent' if stored.parent_id or options.parent_id else ''}. Start it with the same "
            f"workflow and input to get it back, or use another id."
        )
    return StartResult(
        stored.id, stored.workflow, stored.version, created, Status(stored.status), debounced
    )


@retries_deadlocks
def _create(using: str, new: NewInstance) -> tuple[WorkflowInstance, bool, bool]:
    """start_instance()'s writes: the stored instance, whether this start created it, and
    whether it debounced the stored one."""
    if new.alone and (
        not connections[using].in_atomic_block or backend(using).starts_alone_in_transactions
    ):
        stored, created = store.start_alone(using, new.instance)
        if created:
            wakeups.wake_local_workers_at_commit(using)
        return stored, created, False
    with transaction.atomic(using=using, savepoint=False):
        if new.debounce is not None:
            store.lock_debounced_starts(using, new.instance.pk)
        stored, created = store.create_instance(
            using, new.instance, tags=new.tags, attributes=new.attributes, entries=new.entries
        )
        debounced = None
        if not created and new.debounce is not None:
            debounced = store.debounce_instance(using, new.instance, *new.debounce)
        if created or debounced is not None:
            wake_on_commit(using)
        return debounced or stored, created, debounced is not None


def start_new_instances(using: str, new: list[NewInstance]) -> bool:
    """Create all of these new instances, or none of them (when an id is taken: False), in a
    savepoint of the caller's transaction, writing what start_instance() writes for each
    (its row, tags, search attributes and first journal entries) and waking the workers at
    commit. Each id is written once: an id taken by an instance started before is left to
    start_instance()."""
    if not new:
        return True
    if not store.create_instances(
        using, [(n.instance, n.tags, n.attributes, n.entries) for n in new]
    ):
        return False
    wake_on_commit(using)
    return True


def _debounce(
    definition: Workflow, options: StartOptions
) -> tuple[timedelta, timedelta | None] | None:
    """The quiet time and longest wait of a debounced start: start()'s, else its workflow's for
    a start with an id (ValueError for one without). None for a start that is not debounced."""
    if options.debounce is None and options.debounce_timeout is None:
        if options.id is None or options.repeated or definition.debounce is None:
            return None
        return definition.debounce, definition.debounce_timeout
    quiet, longest = check_debounce(options.debounce, options.debounce_timeout)
    if options.id is None or options.repeated:
        raise ValueError(
            "debounce needs an id: a start debounces the starts of the same id. Give start() "
            'the id that names what the starts are about, as in id=f"reindex-{doc.pk}".'
        )
    assert quiet is not None  # check_debounce() refuses a timeout without a debounce
    return quiet, longest


def limit_key(definition: Workflow, kind: str, given: str | None, input: Any) -> str | None:
    """The key of a start under the workflow's `kind` of limit ("concurrency", "rate_limit"):
    the given one, else the first keyed limit's key of the input (None without a keyed limit).
    ValueError for a given key without a keyed limit, TypeError for a key that is not a string."""
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


def fair_key_of(definition: Workflow, given: str | None, input: Any) -> str | None:
    """The fair key of a start: the given one, else the workflow's fair_key(input) (None: no
    key). TypeError for a key the function gives that is not a string (check_key() checks a
    given one)."""
    if given is not None or definition.fair_key is None:
        return given
    key = definition.fair_key(input)
    if key is not None and not isinstance(key, str):
        raise TypeError(
            f"The fair_key function of workflow {definition.name!r} must return a string or "
            f"None, not {type(key).__name__}."
        )
    return key


def request_cancel(
    id: str, reason: str | None = None, *, terminate: bool, using: str | None
) -> CancelResult:
    """Ask an unfinished instance to cancel (or with `terminate`, to stop without running its
    compensations), as cancel() and terminate() do, and as a parent does to its children.

    `accepted` is False when it had ended, was compensating, or a cancel or terminate was
    requested before. Raises WorkflowNotFoundError for an unknown id, TypeError or ValueError
    for a reason that is not a string or is too long, ValueError for an id with a NUL or a lone
    surrogate in it.
    """
    check_lookup("The instance id", id)
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
            wake_on_commit(using)
            transaction.on_commit(
                lambda: wakeups.cancel_requested(id, terminate=terminate, reason=reason),
                using=using,
            )
    # Not strict: an instance whose payloads the codec cannot read can still be cancelled.
    status = load_status(using, id, strict=False)
    if status is None:
        raise WorkflowNotFoundError(f"No workflow instance has the id {id!r}.")
    return CancelResult(accepted, status)


def load_status(
    using: str,
    id: str,
    *,
    strict: bool = True,
    journal: bool = False,
    children: bool = False,
) -> InstanceStatus | None:
    """The instance `id` as instance_status() shows it, read now: its row, then only those of
    its waits, published values, tags, attributes and streams that exist (one query for an
    instance with none); with `journal`, the workflow's own entries (not the engine's
    bookkeeping, BOOKKEEPING_KINDS), and with `children`, its children's statuses. None for an
    unknown id, read in one query."""
    found = store.get_instance_and_related(using, id)
    if found is None:
        return None
    row, _ = found
    holding = store.holding([found])
    tags, attributes = searchable.load(
        using, tags=holding["tags"], attributes=holding["attributes"]
    )
    return instance_status(
        row,
        store.load_waits(using, holding["waits"]).get(id, []),
        _workflow_journal(using, id) if journal else None,
        _children(using, id) if children else None,
        strict=strict,
        values=latest_values(using, holding["values"], strict=strict).get(id),
        tags=tags.get(id),
        attributes=attributes.get(id),
        streams=stream_heads(using, holding["streams"]).get(id),
    )


def _workflow_journal(using: str, id: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (name, document)
        for name, document in store.load_journal(using, id)
        if document.get("kind") not in BOOKKEEPING_KINDS
    ]


def _children(using: str, id: str) -> list[InstanceStatus]:
    rows = store.list_instances(using, parent_id=id, limit=10_000)
    holding = store.holding(rows)
    waits = store.load_waits(using, holding["waits"])
    tags, attributes = searchable.load(
        using, tags=holding["tags"], attributes=holding["attributes"]
    )
    return [
        instance_status(
            row,
            waits.get(row.id, []),
            strict=False,
            tags=tags.get(row.id),
            attributes=attributes.get(row.id),
        )
        for row, _ in rows
    ]


def _journal_entry(name: str, doc: dict[str, Any]) -> JournalEntry:
    started, finished = doc.get("started_at"), doc.get("finished_at")
    logs = doc.get("logs")
    return JournalEntry(
        name=name,
        kind=doc.get("kind", "step"),
        status=doc.get("status", ""),
        attempt=doc.get("attempt"),
        result=doc.get("result"),
        error=doc.get("error"),
        started_at=datetime.fromisoformat(started) if started else None,
        finished_at=datetime.fromisoformat(finished) if finished else None,
        logs=[
            StepLog(datetime.fromisoformat(line["at"]), line["level"], line["message"])
            for line in (logs if isinstance(logs, list) else [])
        ],
        logs_dropped=doc.get("logs_dropped") or 0,
    )


def instance_status(
    row: WorkflowInstance,
    waits: list[tuple[str, str | None]],
    journal: list[tuple[str, dict[str, Any]]] | None = None,
    children: list[InstanceStatus] | None = None,
    *,
    strict: bool = True,
    values: dict[str, Any] | None = None,
    tags: list[str] | None = None,
    attributes: dict[str, Any] | None = None,
    streams: dict[str, dict[str, Any]] | None = None,
) -> InstanceStatus:
    """The row as the client returns it (an InstanceStatus), its payloads decoded. Not strict: a payload the codec
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
        queue=row.queue,
        fair_key=row.fair_key,
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
        values=values or {},
        streams=streams or {},
        generation=row.generation,
        forked_from=row.forked_from,
        subject=subject_label(
            row.subject_type_id, row.subject_id, row._state.db or database_alias()
        ),
        tags=tags or [],
        attributes=attributes or {},
    )
