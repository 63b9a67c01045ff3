"""Breakpoints (ctx.breakpoint()): a wait, journaled under its name, that only
django_workflows.resume() (or the admin's Resume action) ends.

The wait is for the engine-owned signal `$breakpoint` keyed by the instance's id. resume()
records it only while the instance waits at that breakpoint, with the breakpoint's name and the
time it was reached (`at`), so a resume meant for one arrival at a breakpoint never ends another.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..models import JOURNAL_NAME_LENGTH
from ..store.signals import BREAKPOINT_SIGNAL
from . import journal
from .waits import SignalCondition, wait

if TYPE_CHECKING:
    from .surface import Surface


def addressed_to(x: Surface, entry: str, **fields: Any) -> Any:
    """A signal condition's match: the payload names this entry's arrival (`at`, the time the
    entry was reached, as journaled, in this run's `generation`) and carries `fields`."""
    generation = x.instance.generation

    def match(payload: Any) -> bool:
        if not isinstance(payload, dict):
            return False
        with x.lock:
            reached = x.journal.entries.get(entry, {}).get("started_at")
        return (
            payload.get("at") == reached and payload.get("generation", 0) == generation
        ) and all(payload.get(key) == value for key, value in fields.items())

    return match


def completed_before(x: Surface, name: str) -> bool:
    """Whether the journal this execution read has the entry `name` completed: then a wait
    returns its journaled outcome and its event was sent by an earlier execution."""
    with x.lock:
        entry = x.journal.entries.get(name)
    return entry is not None and entry.get("status") == journal.COMPLETED


def breakpoint(x: Surface, name: str) -> None:
    """Suspend at the breakpoint `name` until resume() continues it; at once on replay.

    Raises WorkflowDefinitionError for a name that is not a non-empty string, ValueError for
    one longer than a journal name may be.
    """
    name = journal.check_name(name, "breakpoint")
    if len(name) > JOURNAL_NAME_LENGTH:
        raise ValueError(
            f'The breakpoint name "{name[:40]}..." is {len(name)} characters long; the most it '
            f"can be is {JOURNAL_NAME_LENGTH}."
        )
    replayed = completed_before(x, name)
    condition = SignalCondition(BREAKPOINT_SIGNAL, x.instance.id, addressed_to(x, name, name=name))
    wait(x, name, {"resume": condition}, kind="breakpoint")
    if not replayed:
        x.guards.emit("breakpoint-resumed", breakpoint=name)
