"""ctx.gather(): branches of workflow code in threads of their own, joined in a fixed order."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import errors
from ..errors import WorkflowInterrupt
from .interrupts import Cancel, HandBack, JournalFull, LeaseLost, RunTimeout, StoreFailed, Suspend

if TYPE_CHECKING:
    from .surface import Surface


def gather(x: Surface, fns: list[Callable[[], Any]]) -> list[Any]:
    """Run `fns` in threads of their own, each a branch of the workflow; their results in order,
    or the most important of the errors they raised (engine interrupts first).
    WorkflowDefinitionError for an argument that is not callable."""
    for fn in fns:
        if not callable(fn):
            raise errors.WorkflowDefinitionError(
                f"gather() takes zero-argument callables, not {fn!r}."
            )
    x.guards.guard_step("ctx.gather()")
    position = x.journal.next_position()
    results: list[Any] = [None] * len(fns)
    outcomes: list[BaseException | None] = [None] * len(fns)
    finished = threading.Semaphore(0)

    def branch(index: int, fn: Callable[[], Any]) -> None:
        x.local.path = (*position, index)
        x.local.branch = True  # this thread may call ctx
        try:
            results[index] = fn()
            swallowed = x.guards.swallowed()
            if swallowed is not None:  # the branch's code swallowed it: raise it all the same
                raise swallowed
        except WorkflowInterrupt as interrupt:
            outcomes[index] = interrupt
        except BaseException as error:  # collected, re-raised below in a fixed order
            outcomes[index] = x.guards.swallowed() or error
        finally:
            x.stops.gate.change(-1)  # this branch runs no more workflow code
            finished.release()
            x.lease.calls.wake()

    threads = [
        threading.Thread(
            target=branch, args=(i, fn), name=f"{x.instance.id} branch {i}", daemon=True
        )
        for i, fn in enumerate(fns)
    ]
    # The branches run workflow code from now; this thread only waits for them.
    x.stops.gate.change(len(threads) - 1)
    for thread in threads:
        thread.start()
    remaining = len(threads)
    while remaining:
        if finished.acquire(blocking=False):
            remaining -= 1
            continue
        x.lease.calls.serve(0.05)
    x.stops.gate.change(1)
    raised = [error for error in outcomes if error is not None]
    order: tuple[type[BaseException], ...] = (LeaseLost, StoreFailed, HandBack)
    for kind in order:
        for error in raised:
            if isinstance(error, kind):
                raise x.guards.noted(error)
    if x.stops.escaped is not None:  # a step's KeyboardInterrupt: it stops the execution
        raise x.stops.escaped
    if x.guards.definition_error is not None:
        raise x.guards.definition_error
    order = (Cancel, RunTimeout, JournalFull, Exception, SystemExit, Suspend)
    for kind in order:
        for error in raised:
            if isinstance(error, kind):
                raise x.guards.noted(error)
    if raised:
        raise x.guards.noted(raised[0])
    return results
