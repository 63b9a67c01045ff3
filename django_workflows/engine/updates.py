"""Updates, the workflow's side: ctx.wait_for_update() and ctx.update_wait() wait for the
engine-owned signal `$update:<name>` keyed by this instance's id, which update() records once
the workflow's validator accepted it.

Each wait is journaled as `$update:<name>#<n>` (in a gather() branch `#<branch path>.<n>`), n
counting this run's waits for that name, so a loop can wait for the same update again and again;
the signals are taken in the order they were recorded, each by one wait.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..definitions import check_update_name
from ..durations import Duration
from ..store.signals import UPDATE_PREFIX
from .starts import check_key
from .waits import SignalCondition, timer, wait

if TYPE_CHECKING:
    from .surface import Surface


def update_condition(x: Surface, name: str) -> SignalCondition:
    """The condition of update `name` to this instance, for wait_for_any(); TypeError or
    ValueError for a bad name."""
    signal = UPDATE_PREFIX + check_update_name(name)
    check_key("The update name", signal, x.using)
    return SignalCondition(signal, x.instance.id, None)


def wait_for_update(x: Surface, name: str, *, timeout: Duration | None) -> Any:
    """Wait for update `name` to this instance: its argument, or None once `timeout` passes."""
    conditions: dict[str, Any] = {"update": update_condition(x, name)}
    if timeout is not None:
        conditions["timeout"] = timer(timeout)
    return wait(x, _wait_name(x, name), conditions).value


def _wait_name(x: Surface, name: str) -> str:
    """The journal name of this run's next wait for update `name` on this thread's path.

    The digits and dots after the last "#" never hold a "#", so no two update names share one.
    """
    with x.lock:
        path = x.journal.path()
        prefix = f"{UPDATE_PREFIX}{name}#" + "".join(f"{step}." for step in path)
        number = 1
        while f"{prefix}{number}" in x.journal.reached:
            number += 1
        return f"{prefix}{number}"
