"""Journaled values (ctx.now(), ctx.random(), ctx.uuid()): made once, replayed after."""

from __future__ import annotations

import random as _random
import uuid as _uuid
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from . import journal
from .interrupts import ReplayEnd

if TYPE_CHECKING:
    from .runtime import Runtime


def value(x: Runtime, kind: str, make: Callable[[], Any]) -> Any:
    """A journaled value of `kind`, `$<kind>:<position>`: `make()` once, its entry after."""
    x._guard_step(f"ctx.{kind}()")
    position = x._next_position()
    name = f"${kind}:{'.'.join(map(str, position))}"
    with x._lock:
        x.reached.add(name)
        entry = x.journal.get(name)
    if entry is not None:
        return entry["result"]
    if x.replay_only:
        raise ReplayEnd()
    result = make()
    x.record(
        name,
        position,
        kind="value",
        status=journal.COMPLETED,
        result=result,
        finished_at=journal.timestamp(x.now()),
    )
    return result


def now(x: Runtime) -> datetime:
    """The engine clock's time, journaled."""
    return datetime.fromisoformat(value(x, "now", lambda: journal.timestamp(x.now())))


def random(x: Runtime) -> float:
    """A random float in [0, 1), journaled."""
    return float(value(x, "random", _random.random))


def uuid(x: Runtime) -> str:
    """A random UUID as a string, journaled."""
    return str(value(x, "uuid", lambda: str(_uuid.uuid4())))
