"""The client's async twins, named as Django names its own (`astart` for `start`): the same
arguments, results and errors; the database work runs in a thread, as Django's async ORM
methods run it (`sync_to_async(thread_sensitive=True)`), never on the caller's event loop.

`aresult()` does not hold that thread while it waits: it reads the instance in it, then sleeps
on the loop (asyncio.sleep, 20 ms doubling to 1 s) until the instance ends.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import connections

from ..conf import database_alias
from ..definitions import Workflow
from ..durations import Duration, parse_duration
from ..errors import WorkflowResultTimeoutError
from . import approvals, forks, operations, published, updates
from . import instances as client

P = ParamSpec("P")
R = TypeVar("R")


def _twin(fn: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """The async twin of the client call `fn`: `fn` run by sync_to_async(thread_sensitive=True)."""
    run = sync_to_async(fn, thread_sensitive=True)

    @functools.wraps(fn)
    async def twin(*args: P.args, **kwargs: P.kwargs) -> R:
        return await run(*args, **kwargs)

    twin.__name__ = twin.__qualname__ = f"a{fn.__name__}"
    twin.__doc__ = (
        f"The async twin of `{fn.__name__}()`: the same arguments, result and errors, its "
        "database work run in a thread (`sync_to_async(thread_sensitive=True)`)."
    )
    return twin


astart = _twin(client.start)
asignal = _twin(client.signal)
aget_status = _twin(client.get_status)
alist_instances = _twin(client.list_instances)
acancel = _twin(client.cancel)
aterminate = _twin(client.terminate)
aretry = _twin(operations.retry)
adelete = _twin(operations.delete)
apurge = _twin(operations.purge)
afork = _twin(forks.fork)
aget_value = _twin(published.get_value)
aupdate = _twin(updates.update)
aresume = _twin(approvals.resume)
acomplete_task = _twin(approvals.complete_task)
afail_task = _twin(approvals.fail_task)

_read_end = sync_to_async(client.result, thread_sensitive=True)


async def aresult(id: str, *, timeout: Duration | None = None, using: str | None = None) -> Any:
    """The async twin of `result()`: wait for the instance to end and return its output.

    Each look at the instance runs in a thread; between them it sleeps on the loop (20 ms,
    doubling to 1 s), so a long wait holds no thread. Raises WorkflowNotFoundError for an
    unknown id, WorkflowFailedError for one that failed or was cancelled, and
    WorkflowResultTimeoutError past `timeout` (wall-clock; the instance keeps running).
    """
    limit = None if timeout is None else parse_duration(timeout, "timeout").total_seconds()
    started = time.monotonic()
    pause = 0.02
    while True:
        try:
            return await _read_end(id, timeout=0, using=using)
        except WorkflowResultTimeoutError:  # not ended yet
            waited = time.monotonic() - started
            if limit is not None and waited >= limit:
                raise client.result_timeout(id, limit) from None
        await asyncio.sleep(pause if limit is None else max(0.0, min(pause, limit - waited)))
        pause = min(pause * 2, 1.0)


def _refuse_atomic(using: str | None) -> str:
    alias = database_alias(using)
    if connections[alias].in_atomic_block:
        raise TypeError(
            "astart_and_wait() cannot run inside transaction.atomic(): the instance only exists "
            "once the transaction commits. Call astart() in the transaction and aresult() after."
        )
    return alias


async def astart_and_wait(
    workflow: Workflow | str,
    input: Any = None,
    *,
    wait_timeout: Duration | None = None,
    using: str | None = None,
    **start_options: Any,
) -> Any:
    """The async twin of `start_and_wait()`: astart(), then aresult(). TypeError inside
    transaction.atomic(), as start_and_wait() raises it."""
    alias = await sync_to_async(_refuse_atomic, thread_sensitive=True)(using)
    started = await astart(workflow, input, using=alias, **start_options)
    return await aresult(started.id, timeout=wait_timeout, using=alias)
