"""ctx.set_attributes(): search attributes set from a run, journaled as a value and written
with it in one fenced write; a replay of the call writes nothing again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import errors
from ..attributes import MAX_ATTRIBUTES, check_attributes
from ..store import attributes as searchable
from . import journal
from .interrupts import ReplayEnd

if TYPE_CHECKING:
    from .surface import Surface

PREFIX = "$attributes:"
"""The journal names of ctx.set_attributes() calls: `$attributes:<position>`."""


def set_attributes(x: Surface, values: dict[str, Any]) -> None:
    """Set the search attributes `values` of the instance (None removes one), written at once
    with the call's journal entry; a replay of the call writes nothing.

    Raises TypeError or ValueError for a bad name or value (as start(attributes=...) does), or
    when the instance would have more than MAX_ATTRIBUTES; WorkflowDefinitionError inside a
    step's function; WorkflowNonDeterminismError when the journal set other names here."""
    x.guards.guard_step("ctx.set_attributes()")
    changes = check_attributes(values, "ctx.set_attributes()", removable=True)
    if not changes:
        return
    position = x.journal.next_position()
    entry_name = f"{PREFIX}{'.'.join(map(str, position))}"
    with x.lock:
        x.journal.reached.add(entry_name)
        entry = x.journal.entries.get(entry_name)
    if entry is not None:
        if sorted(entry.get("names") or []) != sorted(changes):
            raise x.guards.define_error(
                errors.WorkflowNonDeterminismError(
                    f'Instance "{x.instance.id}" of workflow "{x.instance.workflow}@'
                    f'{x.instance.version}" does not match its journal: the attributes set here '
                    f"were {sorted(entry.get('names') or [])} and are now {sorted(changes)}."
                )
            )
        return
    if x.journal.replay_only:
        raise ReplayEnd()
    added = {name for name, value in changes.items() if value is not None}
    if added:
        # Only the lease holder writes them: what it reads now is what the write changes.
        existing = x.lease.store_call(
            lambda: searchable.names(x.using, x.instance.id), "a read of search attributes"
        )
        removed = {name for name, value in changes.items() if value is None}
        count = len((existing - removed) | added)
        if count > MAX_ATTRIBUTES:
            raise ValueError(
                f"ctx.set_attributes() would give the instance {count} search attributes; it "
                f"has at most {MAX_ATTRIBUTES}. Remove some first (set them to None)."
            )
    written = {name: None if v is None else v.journal_form() for name, v in changes.items()}
    x.journal.record(
        entry_name,
        position,
        kind="value",
        status=journal.COMPLETED,
        names=sorted(changes),
        result=written,
        finished_at=journal.timestamp(x.guards.now()),
    )
    # Written now, with the entry that journals it: a search finds the instance by what the
    # run set so far, and a replay that finds the entry knows the rows were written.
    x.lease.write(attributes=changes)
    x.guards.emit("attributes-set", attributes=written)
