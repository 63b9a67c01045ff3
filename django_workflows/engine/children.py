"""Child workflows: started from a parent's run, journaled, and awaited like a signal.

Starting a child is journaled as `$child:<id>`; the child is an instance of its own, with
`parent_id` and `parent_close`. When it ends, its final write records the signal `$child` keyed
by its id, with its status, output and error, in the same transaction (the store contract's
"how a child that ends tells its parent"): the parent waits for that signal as `$result:<id>`,
so a child that ends first, or while the parent runs, is never missed.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from .. import errors
from ..definitions import DEFAULT_QUEUE
from ..durations import Duration
from ..models import KEY_LENGTH, UNFINISHED, Status, WorkflowInstance
from ..store.signals import CHILD_SIGNAL
from . import journal, starts
from .replay import sibling
from .waits import SignalCondition, Waitable, wait

if TYPE_CHECKING:
    from .surface import Surface

CHILD_PREFIX = "$child:"  # a child's start's entry: "$child:<id>"
PARENT_CLOSE = ("cancel", "terminate", "abandon")
# A derived child id keeps this much of its parent's id: with "/", 32 hex digits and "#" that
# leaves 21 digits for n within KEY_LENGTH.
_KEPT_OF_PARENT = 200


@dataclass(frozen=True)
class ChildCondition(SignalCondition):
    """A child's end, in wait_for_any(): the signal its final write records for its parent."""

    child: ChildHandle | None = None

    exclusive: ClassVar[bool] = False  # a child's end is a fact every wait for it sees

    def outcome(self, payload: Any) -> Any:
        """The child's output, or ChildWorkflowFailedError."""
        return payload if self.child is None else child_outcome(self.child, payload)


class ChildHandle(Waitable):
    """A child workflow started with ctx.start_child(): its `id`, and `result()`, which waits
    for it to end and returns its output (or raises ChildWorkflowFailedError). Also a condition
    of ctx.wait_for_any()."""

    def __init__(self, id: str, workflow: str, x: Surface):
        self.id = id
        self.workflow = workflow
        self._x = x

    def __repr__(self) -> str:
        return f"ChildHandle(id={self.id!r}, workflow={self.workflow!r})"

    def condition(self) -> ChildCondition:
        return ChildCondition(CHILD_SIGNAL, self.id, None, self)

    def result(self) -> Any:
        """Wait for the child to end (journaled as `$result:<id>`): its output, or
        ChildWorkflowFailedError when it failed, was cancelled, terminated or deleted."""
        x, name = self._x, f"$result:{self.id}"
        with x.lock:  # called again in this run: the end it returned before
            entry = x.journal.entries.get(name) if name in x.journal.reached else None
        if entry is not None and entry["status"] == journal.COMPLETED:
            return child_outcome(self, copy.deepcopy(entry["result"]["value"]))
        ended = wait(x, name, {"child": self.condition()}, kind="child")
        return child_outcome(self, ended.value)


def start_child(
    x: Surface,
    workflow: Any,
    input: Any,
    *,
    id: str | None,
    version: int | None,
    timeout: Duration | None,
    parent_close: str,
    priority: int | None,
    concurrency_key: str | None,
    rate_limit_key: str | None,
    tags: Any = None,
    attributes: Any = None,
    queue: str | None = None,
    fair_key: str | None = None,
) -> ChildHandle:
    """Start the child once (a replay gets the same one back) and return its handle; its
    `tags` and search `attributes` are checked as start()'s are. Its queue: `queue`, else its
    workflow's when that names one, else its parent's. Its fair key: `fair_key`, else its
    workflow's of the input when that has a function, else its parent's."""
    x.guards.guard_step("ctx.start_child()")
    if parent_close not in PARENT_CLOSE:
        raise errors.WorkflowDefinitionError(
            f"parent_close must be one of {', '.join(PARENT_CLOSE)}, not {parent_close!r}."
        )
    definition = x.resolve(workflow, version)
    if id is None:
        id = _default_id(x, definition.name)
    starts.check_key("The child's id", id, x.using)
    name = f"{CHILD_PREFIX}{id}"
    position, entry = x.journal.enter(name, "child")
    if entry is not None and entry["status"] == journal.COMPLETED:
        # The journaled child: in a fork, the original's (its entry renamed to the fork's id).
        return ChildHandle(entry["result"].get("id", id), entry["result"]["workflow"], x)
    x.stops.check_interrupts(name, entry)
    value = x.lease.to_json(input, f'The input of child workflow "{definition.name}"')
    inherited = priority if priority is not None else (x.instance.priority or None)
    if queue is None:
        named = definition.queue != DEFAULT_QUEUE
        queue = definition.queue if named else x.instance.queue
    if fair_key is None and definition.fair_key is None:
        fair_key = x.instance.fair_key
    options = starts.StartOptions(
        id=id,
        timeout=timeout,
        priority=inherited,
        queue=queue,
        concurrency_key=concurrency_key,
        rate_limit_key=rate_limit_key,
        fair_key=fair_key,
        tags=tags,
        attributes=attributes,
        parent_id=x.instance.id,
        parent_close=parent_close,
    )
    now = x.guards.now()
    x.lease.store_call(
        lambda: starts.start_instance(definition, value, options, using=x.using),
        "the start of a child",
    )
    x.journal.record(
        name,
        position,
        kind="child",
        status=journal.COMPLETED,
        started_at=journal.timestamp(now),
        finished_at=journal.timestamp(now),
        result={"id": id, "workflow": definition.name, "version": definition.version},
    )
    x.guards.emit(
        "child-started",
        child=id,
        child_workflow=definition.name,
        child_version=definition.version,
    )
    return ChildHandle(id, definition.name, x)


def _default_id(x: Surface, workflow: str) -> str:
    """The `default_child_id()` of the next child of `workflow`, n counting that workflow's
    children in this run.

    In a gather() branch the count depends on which branch gets there first, which a replay
    can change: there, a child journaled at this very position is this call's child, and a new
    child never takes a number a sibling branch journaled.
    """
    parent = journal.run_key(x.instance.id, x.instance.generation)
    with x.lock:
        path = x.journal.path()
        number = x.journal.next_child_number(workflow)
        if not path:  # not in a gather branch: the count is the same in every run
            return default_child_id(parent, workflow, number)
        position = (*path, x.journal.counters.get(path, 0))  # the one enter() gives this call
        started = {  # by the id in the entry's name: a fork's copied entries are renamed
            name[len(CHILD_PREFIX) :]: doc.get("pos")
            for name, doc in x.journal.entries.items()
            if name.startswith(CHILD_PREFIX)
            and doc.get("kind") == "child"
            and isinstance(doc.get("result"), dict)
        }
        for child_id, recorded in started.items():
            if recorded == list(position) and _is_default_id(child_id, parent, workflow):
                return child_id
        while (id := default_child_id(parent, workflow, number)) in started and sibling(
            started[id], position
        ):
            number = x.journal.next_child_number(workflow)
        return default_child_id(parent, workflow, number)


def default_child_id(parent_id: str, workflow: str, number: int) -> str:
    """`<parent id>/<workflow>#<n>`; where that would not fit an id (a long parent id or
    workflow name), the start of the parent's id, a digest of both, and n:
    `<first 200 characters of the parent id>/<32 hex digits>#<n>`. The same in every run."""
    text = f"{parent_id}/{workflow}#{number}"
    if len(text) <= KEY_LENGTH:
        return text
    digest = hashlib.sha256(json.dumps([parent_id, workflow]).encode()).hexdigest()[:32]
    return f"{parent_id[:_KEPT_OF_PARENT]}/{digest}#{number}"


def _is_default_id(id: str, parent_id: str, workflow: str) -> bool:
    """Whether `id` is one of the default ids of `workflow`'s children of this parent."""
    _, mark, number = id.rpartition("#")
    if not (mark and number.isascii() and number.isdigit()):
        return False
    return id == default_child_id(parent_id, workflow, int(number))


def child_outcome(handle: ChildHandle, ended: dict[str, Any]) -> Any:
    """A child's end as its parent sees it: the output, or ChildWorkflowFailedError."""
    if ended.get("status") == Status.COMPLETED:
        return copy.deepcopy(ended.get("output"))
    error = ended.get("error") or {}
    raise errors.ChildWorkflowFailedError(
        f"Child {handle.id!r} ({handle.workflow}) ended {ended.get('status')}: "
        f"{error.get('message', '')}",
        workflow=handle.workflow,
        instance_id=handle.id,
        status=ended.get("status"),
        cause=error,
    )


def end_signal(instance: WorkflowInstance, status: str, output: Any, error: Any) -> dict[str, Any]:
    """The signal a child's final write records for its parent."""
    return {
        "name": CHILD_SIGNAL,
        "key": instance.id,
        "dedupe_id": None,
        "payload": {"status": status, "output": output, "error": error},
    }


def close_children(using: str, parent_id: str, *, why: str) -> None:
    """Apply each unfinished child's `parent_close`: cancel it, terminate it, or leave it.

    Repeatable: a request made before is refused, not repeated."""
    children = WorkflowInstance.objects.using(using).filter(
        parent_id=parent_id, status__in=UNFINISHED
    )
    for child_id, close in children.values_list("id", "parent_close"):
        if close == "abandon":
            continue
        try:
            starts.request_cancel(child_id, why, terminate=close == "terminate", using=using)
        except errors.WorkflowNotFoundError:
            pass  # deleted in the meantime
