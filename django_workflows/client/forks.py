"""fork(): rerun an instance from one of its steps, as a new instance that starts from a copy of
the original's journal before that step.

What the fork copies, and what runs again (docs/how-to/rerun-from-a-step.md says it for users):

- The original's journal entries first written before the entry `from_step` (journal order,
  JournalEntry.id), whose operation had ended: completed steps, and failed ones (a failure the
  workflow caught replays as before), sleeps that fired, waits with the signal or timeout they
  took, commit points, journaled values (`now()`, `random()`, `uuid()`, published values),
  webhooks, children's starts and ends, patch markers. `from_step` and everything after it run again.
- A copied webhook whose wait was not copied as passed (the fork waits for its POST again) gets
  a new key: its URL is the fork's own, and the original's URL still reaches only the original.
- Not copied: the compensations' own entries and retry() markers (the original's history,
  not the fork's), stream writes and closes (`$stream:`: the fork writes its own streams from
  the start, their items stored under its id), and what had not ended when `from_step` was first written (a step, sleep or
  wait of a gather branch still under way): those run again too.
- A copied child start points to the original's child (a default child id is renamed to the
  fork's, as its code derives it); a child started after the point is started again under the
  fork's own id. A copied child whose end the original awaited after the point has its end
  recorded again for the fork to see, if it ended already.
- The fork has its own signal cursor: a wait after the point waits for a signal sent after the
  fork. The custom status is set again by the replay. Its steps' idempotency keys are the
  original's (`<first instance's id>:<step>`): a re-run step repeats no effect the other side
  honoured the key for.
- The input is the original's unless given; the priority is the original's; the concurrency
  and rate-limit keys are the original's for its input, computed from the new input otherwise;
  the run timeout counts from now. A fork is a top-level instance of no schedule.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.db import transaction

from .. import clock
from ..conf import database_alias
from ..definitions import Workflow
from ..engine import journal, webhooks
from ..engine.children import CHILD_PREFIX, default_child_id
from ..engine.registry import registry
from ..engine.scope import running_step
from ..engine.starts import check_key, fair_key_of, limit_key, wake_on_commit
from ..engine.streams import PREFIX as STREAM_PREFIX
from ..errors import WorkflowIdConflictError, WorkflowNotFoundError, WorkflowStateError
from ..events import emit
from ..models import FINISHED, Status, WorkflowInstance
from ..results import StartResult
from ..schedules.ids import is_occurrence_id
from ..store import forks as store_forks
from ..store import instances as store
from ..store import payloads
from ..store.deadlocks import retries_deadlocks
from ..store.jsonvalues import to_json

UNSET: Any = object()
"""fork()'s `input` when not given: the original's."""

_ENDED = (journal.COMPLETED, journal.FAILED)
_RESULT_PREFIX = "$result:"  # a child's end's entry: "$result:<child id>"


def fork(
    id: str,
    *,
    from_step: str,
    new_id: str | None = None,
    input: Any = UNSET,
    using: str | None = None,
) -> StartResult:
    """Start a new instance of the workflow and version of instance `id` whose journal holds
    the original's entries from before the step `from_step`: that step and everything after it
    run again. The new instance's `forked_from` is `id`. Inside a step, a fork without
    `new_id` gets the id start() would derive there; otherwise a fresh UUID.

    Joins the caller's transaction; a worker wakes at commit. With an existing `new_id`, the
    fork of the same instance, step and input is returned (`created=False`).

    Raises TypeError for an input that is not JSON or a `from_step` that is not a string,
    WorkflowNotFoundError for an unknown instance or one whose workflow version is not
    registered, ValueError for a `from_step` that is not a step of its journal (naming those)
    or a bad `new_id`, WorkflowStateError for a point after a step the original compensated,
    WorkflowIdConflictError when `new_id` is another instance, and WorkflowPayloadError when
    the codec cannot read the original. Nothing is written when any is raised.
    """
    using = database_alias(using)
    value = (
        UNSET if input is UNSET else to_json(input, f"The input of the fork of {id!r}", using=using)
    )
    if not isinstance(from_step, str):
        raise TypeError(f"from_step must be a step name (a string), not {from_step!r}.")
    check_key("The instance id", id, using)
    check_key("new_id", new_id, using)
    if new_id == "":
        raise ValueError("new_id must not be empty.")
    row = store.get_instance(using, id)
    if row is None:
        raise WorkflowNotFoundError(f"No workflow instance has the id {id!r}.")
    definition = _definition(row)
    payloads.decode_instance(row)  # WorkflowPayloadError when the codec cannot read it
    entries = store.load_journal(using, id)
    before = _before(id, entries, from_step)
    if value is UNSET:
        value = row.input
    step = running_step.get() if new_id is None else None
    if step is not None:
        new_id = step.start_id(definition.name)
    fork_id = new_id if new_id is not None else str(uuid.uuid4())
    now = clock.now()
    copied, signals = _copied(using, id, fork_id, before, entries)
    copied.append(
        (
            journal.FORK_ENTRY,
            {
                "kind": journal.FORK,
                "status": journal.COMPLETED,
                "forked_from": id,
                "from_step": from_step,
                "key": _line_key(id, entries),
                "finished_at": journal.timestamp(now),
            },
        )
    )
    instance = _instance(definition, row, fork_id, value, now, using)
    payloads.encode_instance(instance)
    announce = {"forked_from": id, "from_step": from_step, "copied": len(copied) - 1}

    @retries_deadlocks
    def create(using: str) -> tuple[WorkflowInstance, bool]:
        with transaction.atomic(using=using, savepoint=False):
            stored, created = store_forks.create_fork(using, instance, copied, signals, now=now)
            if created:
                wake_on_commit(using)
                transaction.on_commit(
                    lambda: emit(
                        "workflow-forked",
                        id=fork_id,
                        workflow=definition.name,
                        version=definition.version,
                        at=now,
                        **announce,
                    ),
                    using=using,
                )
            return stored, created

    stored, created = create(using)
    if not created:
        _check_same(using, stored, id, from_step, value, repeated=step is not None)
    return StartResult(stored.id, stored.workflow, stored.version, created, Status(stored.status))


def _definition(row: WorkflowInstance) -> Workflow:
    """The registered definition of the row's workflow version; WorkflowNotFoundError when
    there is none (the fork would have no code to run)."""
    try:
        return registry.resolve(row.workflow, row.version)
    except WorkflowNotFoundError:
        raise WorkflowNotFoundError(
            f"Instance {row.id!r} is of workflow {row.workflow!r} version {row.version}, which is "
            f"not registered in this application: register that version's code to fork it."
        ) from None


def _before(
    id: str, entries: list[tuple[str, dict[str, Any]]], from_step: str
) -> list[tuple[str, dict[str, Any]]]:
    """The entries before the step `from_step`; ValueError naming the journal's steps when it
    is not one of them, WorkflowStateError when a step before it was compensated."""
    steps = [name for name, doc in entries if doc.get("kind") == "step"]
    if from_step not in steps:
        listed = ", ".join(f'"{name}"' for name in steps) or "none yet"
        raise ValueError(
            f"from_step {from_step!r} is not a step in the journal of instance {id!r}; its steps, "
            f"in journal order: {listed}."
        )
    index = next(i for i, (name, doc) in enumerate(entries) if name == from_step)
    before = entries[:index]
    undone = {doc.get("step") for _, doc in entries if doc.get("kind") == "compensation"}
    compensated = [name for name, doc in before if doc.get("kind") == "step" and name in undone]
    if compensated:
        raise WorkflowStateError(
            f"Instance {id!r} compensated the step{'s' if len(compensated) > 1 else ''} "
            f"{', '.join(repr(n) for n in compensated)} before {from_step!r}: a fork from there "
            f"would build on undone work. Fork from {compensated[0]!r} or an earlier step."
        )
    return before


def _copied(
    using: str,
    id: str,
    fork_id: str,
    before: list[tuple[str, dict[str, Any]]],
    entries: list[tuple[str, dict[str, Any]]],
) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]]]:
    """The entries the fork starts with, renamed where its code names them otherwise, and the
    ends of children it awaits that it could not see otherwise (signals to record)."""
    copied: list[tuple[str, dict[str, Any]]] = []
    awaited: list[str] = []
    kept = {
        name
        for name, doc in before
        # A patch marker is a decision made before the point: the fork keeps it, or its
        # replay of the steps after the marker would take the other branch.
        if (doc.get("kind") not in journal.ENGINE_KINDS or doc.get("kind") == journal.PATCH)
        and doc.get("status") in _ENDED
        # A stream's items are the original's: the fork writes its own streams again.
        and not name.startswith(STREAM_PREFIX)
    }
    for name, doc in before:
        if name not in kept:
            continue
        if doc.get("kind") == "webhook":
            doc = _own_webhook(name, doc, kept)
        if name.startswith(CHILD_PREFIX) and doc.get("kind") == "child":
            child = name[len(CHILD_PREFIX) :]
            name = CHILD_PREFIX + _renamed_child(child, id, fork_id, doc)
            if _RESULT_PREFIX + child not in kept:
                awaited.append(child)
        copied.append((name, doc))
    signals = []
    if awaited:
        # A child's end is recorded once, as a signal before the fork's cursor: the fork would
        # wait for it forever. Recorded again, the end is the same fact every wait sees.
        for child in awaited:
            row = store.get_instance(using, child)
            if row is not None and row.status in FINISHED:
                payloads.decode_instance(row)
                signals.append(
                    {
                        "name": "$child",
                        "key": child,
                        "dedupe_id": None,
                        "payload": {"status": row.status, "output": row.output, "error": row.error},
                    }
                )
    return copied, signals


def _own_webhook(name: str, doc: dict[str, Any], kept: set[str]) -> dict[str, Any]:
    """The fork's entry for the original's webhook entry `name`: as it was when the fork copies
    its wait as passed (the replay gives the body the original took, and the URL opens nothing),
    with a new key otherwise.

    The key is what makes a webhook one instance's: a delivery is the signal `$webhook` keyed
    and deduplicated by it, which the wait takes, and deliver() checks it against the token's
    instance's own entry. A key is random at minting, so only a copied journal shares one; with
    a new key here, the fork's token opens the fork's entry, its POST is a signal the original
    does not wait for, and the original's (sent before the fork or after) is not the fork's.
    (Keying the signal by the instance too would change the signal that instances already
    waiting are waiting for.)"""
    if webhooks.wait_entry(name.removeprefix(webhooks.mint_entry(""))) in kept:
        return doc
    return {**doc, "key": webhooks.new_key()}


def _renamed_child(child: str, id: str, fork_id: str, doc: dict[str, Any]) -> str:
    """The id in the fork's entry name for the original's child `child`: the fork's default
    child id where `child` is the original's default one (the fork's code derives its own),
    `child` itself otherwise."""
    workflow = (doc.get("result") or {}).get("workflow")
    _, mark, number = child.rpartition("#")
    if (
        isinstance(workflow, str)
        and mark
        and number.isascii()
        and number.isdigit()
        and child == default_child_id(id, workflow, int(number))
    ):
        return default_child_id(fork_id, workflow, int(number))
    return child


def _line_key(id: str, entries: list[tuple[str, dict[str, Any]]]) -> str:
    """The id the fork's idempotency keys start with: the original's own key's (a fork of a
    fork keeps the first instance's)."""
    for name, doc in entries:
        if name == journal.FORK_ENTRY and isinstance(doc.get("key"), str):
            return str(doc["key"])
    return id


def _instance(
    definition: Workflow,
    row: WorkflowInstance,
    fork_id: str,
    value: Any,
    now: datetime,
    using: str,
) -> WorkflowInstance:
    """The fork's pending row, due now; ValueError for an id a schedule's occurrence takes."""
    if is_occurrence_id(fork_id):
        raise ValueError(
            f"new_id {fork_id!r} has the form of a schedule occurrence's, "
            f"<schedule id>@<time>, which only that occurrence's instance takes: use another id."
        )
    same_input = value == row.input
    concurrency_key = (
        row.concurrency_key if same_input else limit_key(definition, "concurrency", None, value)
    )
    rate_limit_key = (
        row.rate_limit_key if same_input else limit_key(definition, "rate_limit", None, value)
    )
    fair_key = row.fair_key if same_input else fair_key_of(definition, None, value)
    check_key("concurrency_key", concurrency_key, using)
    check_key("rate_limit_key", rate_limit_key, using)
    check_key("fair_key", fair_key, using)
    timeout = definition.timeout
    return WorkflowInstance(
        id=fork_id,
        workflow=definition.name,
        version=definition.version,
        status=Status.PENDING,
        input=value,
        wake_at=now,
        deadline=None if timeout is None else now + timeout,
        priority=row.priority,
        queue=row.queue,
        concurrency_key=concurrency_key,
        rate_limit_key=rate_limit_key,
        fair_key=fair_key,
        forked_from=row.id,
        # A rerun of what the original did is about the same object.
        subject_type_id=row.subject_type_id,
        subject_id=row.subject_id,
        created_at=now,
        updated_at=now,
    )


def _check_same(
    using: str,
    stored: WorkflowInstance,
    id: str,
    from_step: str,
    value: Any,
    *,
    repeated: bool,
) -> None:
    """WorkflowIdConflictError unless the existing `stored` is the fork of `id` from
    `from_step` with this input (a step's repeat gets its fork back whatever the input)."""
    document = store_forks.fork_entry(using, stored.id, journal.FORK_ENTRY) or {}
    same = (
        stored.forked_from == id
        and document.get("from_step") == from_step
        and (
            repeated
            or payloads.decode_value(
                "input", stored.input, payloads.instance_at(stored.id, "input")
            )
            == value
        )
    )
    if not same:
        raise WorkflowIdConflictError(
            f"Instance {stored.id!r} exists already, and is not the fork of {id!r} from step "
            f"{from_step!r} with this input. Fork with another new_id, or none for a fresh one."
        )
