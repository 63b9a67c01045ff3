"""Journaled values: ctx.now(), ctx.random(), ctx.uuid() (made once, replayed after) and the
values an instance publishes with ctx.set_value() (written once, read by get_value())."""

from __future__ import annotations

import random as _random
import uuid as _uuid
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .. import errors
from ..jsonvalues import check_text, size
from ..models import JOURNAL_NAME_LENGTH
from ..store import wakeups
from ..store.published import PREFIX
from . import journal
from .interrupts import ReplayEnd

if TYPE_CHECKING:
    from .surface import Surface


def value(x: Surface, kind: str, make: Callable[[], Any]) -> Any:
    """A journaled value of `kind`, `$<kind>:<position>`: `make()` once, its entry after."""
    x.guards.guard_step(f"ctx.{kind}()")
    position = x.journal.next_position()
    name = f"${kind}:{'.'.join(map(str, position))}"
    with x.lock:
        x.journal.reached.add(name)
        entry = x.journal.entries.get(name)
    if entry is not None:
        return entry["result"]
    if x.journal.replay_only:
        raise ReplayEnd()
    result = make()
    x.journal.record(
        name,
        position,
        kind="value",
        status=journal.COMPLETED,
        result=result,
        finished_at=journal.timestamp(x.guards.now()),
    )
    return result


def now(x: Surface) -> datetime:
    """The engine clock's time, journaled."""
    return datetime.fromisoformat(value(x, "now", lambda: journal.timestamp(x.guards.now())))


def random(x: Surface) -> float:
    """A random float in [0, 1), journaled."""
    return float(value(x, "random", _random.random))


def uuid(x: Surface) -> str:
    """A random UUID as a string, journaled."""
    return str(value(x, "uuid", lambda: str(_uuid.uuid4())))


VALUE_LIMIT = 64 * 1024
"""The most a published value takes as JSON."""


def set_value(x: Surface, name: str, value: Any) -> None:
    """Publish `value` (JSON, at most 64 KiB) as the instance's value `name`, the latest of
    that name from now on; a replay of the call writes nothing. Raises TypeError for a name that
    is not a non-empty string or a value that is not JSON or is larger, ValueError for a name
    longer than JOURNAL_NAME_LENGTH or that no database stores, WorkflowDefinitionError inside a
    step's function, WorkflowNonDeterminismError when the journal has another name here."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"ctx.set_value() needs a non-empty string name, got {name!r}.")
    if len(name) > JOURNAL_NAME_LENGTH:
        raise ValueError(
            f'The value name "{name[:40]}..." is {len(name)} characters long; the most it can '
            f"be is {JOURNAL_NAME_LENGTH}."
        )
    check_text(f"The value name {name[:40]!r}", name)
    x.guards.guard_step("ctx.set_value()")
    value = x.lease.to_json(value, f'The value "{name}"')
    if size(value) > VALUE_LIMIT:
        raise TypeError(f'The value "{name}" takes more than 64 KiB as JSON.')
    position = x.journal.next_position()
    entry_name = f"{PREFIX}{'.'.join(map(str, position))}"
    with x.lock:
        x.journal.reached.add(entry_name)
        entry = x.journal.entries.get(entry_name)
    if entry is not None:
        if entry.get("name") != name:
            raise x.guards.define_error(
                errors.WorkflowNonDeterminismError(
                    f'Instance "{x.instance.id}" of workflow "{x.instance.workflow}@'
                    f'{x.instance.version}" does not match its journal: the value set here was '
                    f'"{entry.get("name")}" and is now "{name}".'
                )
            )
        return
    if x.journal.replay_only:
        raise ReplayEnd()
    x.journal.record(
        entry_name,
        position,
        kind="value",
        status=journal.COMPLETED,
        name=name,
        result=value,
        finished_at=journal.timestamp(x.guards.now()),
    )
    # Written now, not with the next write as other entries are: a value exists to be read
    # while the workflow goes on, and the next write may be a long step or a sleep away.
    # The write also carries what was buffered before it (a step's result), so a reader never
    # sees a value ahead of the journal that led to it.
    x.lease.write(announce=True)
    wakeups.value_published(x.instance.id)
    x.guards.emit("value-set", name=name, value=value)
