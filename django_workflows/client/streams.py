"""read_stream() and aread_stream(): a stream's items in offset order, waiting for new ones.

A client call on the caller's connection, like get_value(): between reads it waits the way
result() does: the in-process wake-up when an execution of this process appends, PostgreSQL's
NOTIFY when one in another process does (the reader marks the instance awaited, so appends
announce themselves), and otherwise a poll every WORKER['WAKEUP_INTERVAL'] (50 ms), as an idle
worker looks for starts. aread_stream() reads in a thread (sync_to_async) and sleeps on the
loop between reads, so a long stream holds no thread.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from asgiref.sync import sync_to_async

from ..conf import database_alias, get_settings
from ..durations import Duration, parse_duration
from ..errors import WorkflowNotFoundError, WorkflowResultTimeoutError
from ..jsonvalues import check_lookup
from ..models import FINISHED
from ..results import StreamItem
from ..store import instances as store
from ..store import streams, wakeups
from ..store.backends import backend

BATCH = 500
"""The most items one read takes."""

LONGEST_PAUSE = 1.0
"""The longest sleep between two reads where a write wakes the reader (NOTIFY)."""


def _checked(id: Any, name: Any, after: Any, timeout: Any, using: str | None) -> Any:
    if not isinstance(id, str):
        raise TypeError(f"read_stream() needs an instance id (a string), got {id!r}.")
    if not isinstance(name, str) or not name:
        raise TypeError(f"read_stream() needs a non-empty string name, got {name!r}.")
    if not isinstance(after, int) or isinstance(after, bool) or after < 0:
        raise ValueError(f"read_stream()'s after must be an offset (an int >= 0), not {after!r}.")
    check_lookup("The instance id", id)
    check_lookup("The stream's name", name)
    limit = None if timeout is None else parse_duration(timeout, "timeout").total_seconds()
    return database_alias(using), limit


class _Reader:
    """One reader's reads: the next batch of items, and whether the stream has ended."""

    def __init__(self, using: str, id: str, name: str, after: int, limit: float | None):
        self.using, self.id, self.name, self.after, self.limit = using, id, name, after, limit
        self.ended = False

    def exists(self) -> None:
        if store.get_instance(self.using, self.id) is None:
            raise WorkflowNotFoundError(f"No workflow instance has the id {self.id!r}.")

    def read(self) -> list[StreamItem]:
        """The next items; none and `ended` once the stream is closed or its instance ended
        (read again after that look, for the items written just before it)."""
        found = self._items()
        if found:
            return found
        if streams.is_closed(self.using, self.id, self.name):
            self.ended = True
        else:
            row = store.get_instance(self.using, self.id)
            self.ended = row is None or row.status in FINISHED
        return self._items() if self.ended else []

    def _items(self) -> list[StreamItem]:
        items = [
            StreamItem(item.offset, item.value, item.attempt, item.created_at)
            for item in streams.read(self.using, self.id, self.name, after=self.after, limit=BATCH)
        ]
        if items:
            self.after = items[-1].offset
        return items

    def timed_out(self, waited: float) -> WorkflowResultTimeoutError | None:
        if self.limit is None or waited < self.limit:
            return None
        return WorkflowResultTimeoutError(
            f"No item of the stream {self.name!r} of instance {self.id!r} came within "
            f"{self.limit:g}s; the instance keeps running.",
            instance_id=self.id,
            timeout=self.limit,
        )

    def pause(self, pause: float, waited: float) -> float:
        """How long to sleep now: `pause`, capped by the timeout's rest."""
        return pause if self.limit is None else max(0.0, min(pause, self.limit - waited))


def _poll_interval(using: str) -> tuple[float, float]:
    """The first and the longest pause between two reads."""
    if backend(using).has_listen_notify:
        return 0.02, LONGEST_PAUSE
    wakeup = get_settings().worker.wakeup_interval
    longest = 0.05 if wakeup is None else wakeup.total_seconds()
    return min(0.02, longest), longest


def read_stream(
    id: str,
    name: str,
    *,
    after: int = 0,
    timeout: Duration | None = None,
    using: str | None = None,
) -> Iterator[StreamItem]:
    """The items of instance `id`'s stream `name` with an offset above `after`, in order, as
    StreamItem(offset, value, attempt, at), waiting for new ones until the stream is closed or
    the instance ends.

    `timeout`: the longest wait for the next item, past which the iterator raises
    WorkflowResultTimeoutError (the instance keeps running); None waits as long as it takes.
    Raises WorkflowNotFoundError for an unknown id (at once), TypeError or ValueError for bad
    arguments (at once), WorkflowPayloadError for an item the codec cannot read."""
    alias, limit = _checked(id, name, after, timeout, using)
    reader = _Reader(alias, id, name, after, limit)
    reader.exists()
    return _read(reader)


def _read(reader: _Reader) -> Iterator[StreamItem]:
    first, longest = _poll_interval(reader.using)
    with wakeups.ends_listener(reader.using) as listen:
        started, pause = time.monotonic(), first
        while True:
            items = reader.read()
            if items:
                yield from items
                started, pause = time.monotonic(), first
                continue
            if reader.ended:
                return
            waited = time.monotonic() - started
            error = reader.timed_out(waited)
            if error is not None:
                raise error
            if listen():  # from the first wait on: on PostgreSQL, a NOTIFY at the commit wakes it
                store.mark_awaited(reader.using, reader.id)
            wakeups.wait_for_end(reader.id, reader.pause(pause, waited))
            pause = min(pause * 2, longest)


async def aread_stream(
    id: str,
    name: str,
    *,
    after: int = 0,
    timeout: Duration | None = None,
    using: str | None = None,
) -> AsyncIterator[StreamItem]:
    """The async twin of read_stream(): `async for item in aread_stream(...)`. Each read runs
    in a thread; between reads it sleeps on the loop, so a long wait holds no thread. Its
    errors are read_stream()'s, raised by the first iteration."""
    alias, limit = _checked(id, name, after, timeout, using)
    reader = _Reader(alias, id, name, after, limit)
    await sync_to_async(reader.exists, thread_sensitive=True)()
    read = sync_to_async(reader.read, thread_sensitive=True)
    first, longest = _poll_interval(alias)
    longest = min(longest, 0.25)  # no NOTIFY reaches the loop: its polls stay frequent
    started, pause = time.monotonic(), first
    while True:
        items = await read()
        if items:
            for item in items:
                yield item
            started, pause = time.monotonic(), first
            continue
        if reader.ended:
            return
        waited = time.monotonic() - started
        error = reader.timed_out(waited)
        if error is not None:
            raise error
        await asyncio.sleep(reader.pause(pause, waited))
        pause = min(pause * 2, longest)
