"""ctx.continue_as_new(): end this run and start the instance over, same id, a fresh journal.

The call checks its arguments and raises the interrupt ContinueAsNew, so no code after it runs;
the execution then calls `restart()`, which writes the new start in one write fenced by the
lease token (x.lease.write() with `restart=True`): the journal and the waits deleted, the new
input and version, the run timeout from now, `generation` + 1, due now with the lease released.

What carries over: the id, the priority, the parent, the schedule, the concurrency and rate-limit
keys, a cancel requested meanwhile, and the signals this run did not take. Signals are shared
by name and key, and an instance may take those with an id above its `signal_cursor` that its
journal does not show as taken: `restart()` moves the cursor past the signals the run took as far
as no untaken signal lies before them, and journals the taken ones beyond it in the new
journal's one engine entry, `$continued` (written only when there are any, or a run timeout to
keep), which the next run reads as taken.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from .. import errors
from ..models import Status
from ..store import instances as store
from ..store import wakeups
from ..store.signals import first_unconsumed
from . import journal
from .interrupts import ContinueAsNew
from .lease import UNSET

if TYPE_CHECKING:
    from .surface import Ending, Surface

SAME: Any = object()
"""continue_as_new()'s default input: the current run's."""

LATEST = "latest"
"""continue_as_new(version="latest"): the newest registered version of the workflow."""


def continue_as_new(x: Surface, input: Any, version: int | str | None) -> None:
    """Raise ContinueAsNew for `input` (SAME: this run's) and `version` (None: this one;
    "latest": the newest registered; an int: that registered version).

    Raises WorkflowDefinitionError inside a step's function or a gather() branch, TypeError for
    an input that is not JSON or a version of another type, ValueError for a version below 1,
    WorkflowNotFoundError for a version that is not registered; nothing is written then."""
    x.guards.guard_step("ctx.continue_as_new()")
    if getattr(x.local, "branch", False):
        raise x.guards.define_error(
            errors.WorkflowDefinitionError(
                f"ctx.continue_as_new() was called inside a gather() branch in instance "
                f"{x.instance.id!r}. It ends the whole run: call it from the workflow's own code, "
                f"after the gather() returns."
            )
        )
    instance = x.instance
    if input is SAME:
        input = instance.input
    value = x.lease.to_json(input, "The input of ctx.continue_as_new()")
    definition = x.resolve(instance.workflow, _version(instance.version, version))
    x.stops.check_interrupts(None, None)  # a cancel, a timeout or a shutdown comes first
    raise x.guards.interrupted(ContinueAsNew(definition, value))


def _version(current: int, version: int | str | None) -> int | None:
    """The version to resolve: `current`, None for the newest, or the one given."""
    if version is None:
        return current
    if version == LATEST:
        return None
    if isinstance(version, bool) or not isinstance(version, int):
        raise TypeError(
            f'The version of ctx.continue_as_new() must be None, "latest" or an int, '
            f"not {version!r}."
        )
    if version < 1:
        raise ValueError(f"The version of ctx.continue_as_new() must be 1 or more, not {version}.")
    return version


def restart(x: Ending, request: ContinueAsNew) -> str:
    """Write the new start that `request` asks for, close the children first as an end
    would (each by its parent_close), and make the instance due now; "continued-as-new"."""
    instance = x.instance
    x.close_children(f"Its parent {instance.id!r} continued as new.")
    now = x.guards.now()
    with x.lock:
        taken = set(x.journal.consumed)
        carried = x.journal.entries.get(journal.CONTINUED) or {}
        x.journal.pending = {}  # the run's buffered entries go with its journal
        x.journal.warn_journal = False
        x.lease.desired_status = UNSET  # a new run starts without a custom status
    cursor = instance.signal_cursor
    if taken:
        last = max(taken)
        first = x.lease.store_call(
            lambda: first_unconsumed(x.using, after_id=cursor, up_to_id=last, consumed=taken),
            "a read of signals",
        )
        cursor = last if first is None else first - 1
        taken = {id for id in taken if id > cursor}
    override = _timeout_override(x, carried)
    timeout = override if override is not None else request.definition.timeout
    generation = instance.generation + 1
    entries: dict[str, dict[str, Any]] = {}
    if taken or override is not None:
        entries[journal.CONTINUED] = {
            "kind": "continued",
            "status": journal.COMPLETED,
            "generation": generation,
            "consumed": sorted(taken),
            "timeout": None if override is None else override.total_seconds(),
            "started_at": journal.timestamp(now),
        }
    with x.lock:
        x.journal.pending = entries
    x.lease.write(
        changes={
            "status": Status.PENDING,
            "input": request.input,
            "version": request.definition.version,
            "deadline": None if timeout is None else now + timeout,
            "generation": generation,
            "signal_cursor": cursor,
            "custom_status": None,
            "journal_warned": False,
        },
        release=store.Release(now, [], x.lease.last_signal_id, had_waits=True),
        restart=True,
    )
    x.guards.emit(
        "workflow-continued-as-new",
        generation=generation,
        new_version=request.definition.version,
    )
    wakeups.wake_local_workers()  # its next run is due now
    return "continued-as-new"


def _timeout_override(x: Ending, carried: dict[str, Any]) -> timedelta | None:
    """The run timeout start(timeout=...) gave the instance, kept through its generations;
    None when it runs with its definition's declared one."""
    instance = x.instance
    if instance.generation:
        seconds = carried.get("timeout")
        return None if seconds is None else timedelta(seconds=seconds)
    if instance.deadline is None:
        return None
    # The first run's deadline was set with its creation: their difference is its timeout.
    given = instance.deadline - instance.created_at
    return None if given == x.definition.timeout else given
