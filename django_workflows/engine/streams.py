"""Streams: `ctx.stream(name)` in workflow code (each write journaled: exactly once) and
`step.stream(name)` in a step's function (written as they happen: at least once).

A workflow's write is an item and a journal entry, `$stream:<position>`, written in one
transaction with the entries buffered before it, fenced by the lease: both commit or neither,
and a replay finds the entry and writes nothing. A close is an entry too.

A step's writes are buffered for LINGER seconds (or BATCH items) and appended by a thread of the
stream's own, in one short transaction per batch, each item carrying the attempt: a burst of
small items costs a few transactions, not one each. The step's end waits for its streams'
last batch; a batch the store refused (WorkflowStreamFullError) fails the attempt, at the next
write() or at the end. In an atomic step the items are written on the step's own thread, in
its transaction: readers see them when the step commits. In an execution that runs inside a
transaction (a TestCase's drain()), they are written at once, on the execution's connection.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.db import connections

from .. import errors
from ..jsonvalues import check_text
from ..jsonvalues import to_json as plain_json
from ..models import STREAM_NAME_LENGTH
from ..store import streams as store
from . import journal
from .interrupts import ReplayEnd

if TYPE_CHECKING:
    from .surface import Surface

PREFIX = "$stream:"
"""The journal names of a workflow's stream writes and closes: `$stream:<position>`."""

LINGER = 0.005
"""How long a step's stream waits for more items before it writes a batch (seconds)."""

BATCH = 500
"""The most items one batch of a step's stream writes."""


def check_name(name: Any, where: str) -> str:
    """A stream's name: a non-empty string of at most STREAM_NAME_LENGTH characters that every
    database stores; TypeError or ValueError naming the problem."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"{where} needs a non-empty string name, got {name!r}.")
    if len(name) > STREAM_NAME_LENGTH:
        raise ValueError(
            f'The stream name "{name[:40]}..." is {len(name)} characters long; the most it can '
            f"be is {STREAM_NAME_LENGTH}."
        )
    check_text(f"The stream name {name[:40]!r}", name)
    return name


class Stream:
    """A stream of the instance, written from workflow code: each write() and close() happens
    exactly once, however often the workflow is replayed."""

    def __init__(self, x: Surface, name: str):
        self._x = x
        self.name = check_name(name, "ctx.stream()")

    def __repr__(self) -> str:
        return f"<Stream {self.name!r}>"

    def write(self, value: Any) -> None:
        """Append `value` (JSON) to the stream. Raises TypeError for a value that is not JSON,
        WorkflowStreamFullError past STREAMS' bounds, WorkflowStateError once it is closed."""
        x = self._x
        x.guards.guard_step("Stream.write()")
        value = x.lease.to_json(value, f'An item of the stream "{self.name}"')
        self._journaled("write", value)

    def close(self) -> None:
        """End the stream: readers stop after its last item. Closing it again does nothing."""
        self._x.guards.guard_step("Stream.close()")
        self._journaled("close", None)

    def _journaled(self, what: str, value: Any) -> None:
        x = self._x
        position = x.journal.next_position()
        entry_name = f"{PREFIX}{'.'.join(map(str, position))}"
        with x.lock:
            x.journal.reached.add(entry_name)
            entry = x.journal.entries.get(entry_name)
        if entry is not None:
            if entry.get("name") != self.name or entry.get("stream") != what:
                raise x.guards.define_error(
                    errors.WorkflowNonDeterminismError(
                        f'Instance "{x.instance.id}" of workflow "{x.instance.workflow}@'
                        f'{x.instance.version}" does not match its journal: here it made '
                        f'a {entry.get("stream")} of the stream "{entry.get("name")}", and now '
                        f'a {what} of "{self.name}".'
                    )
                )
            return
        if x.journal.replay_only:
            raise ReplayEnd()
        instance_id, using = x.instance.id, x.using

        def rows() -> dict[str, Any]:
            now = x.guards.now()
            if what == "close":
                store.close(using, instance_id, self.name, now=now)
                return {}
            appended = store.append(using, instance_id, self.name, [value], attempt=None, now=now)
            return {"offset": appended.offset}

        x.lease.write_with(
            rows,
            lambda written: x.journal.record(
                entry_name,
                position,
                kind="value",
                status=journal.COMPLETED,
                name=self.name,
                stream=what,
                finished_at=journal.timestamp(x.guards.now()),
                **written,
            ),
        )


class StepStream:
    """A stream of the instance, written from a step's function: items written as they
    happen, at least once (a retried attempt writes them again), each with its attempt."""

    def __init__(
        self,
        using: str,
        instance_id: str,
        name: str,
        *,
        attempt: int,
        now: Callable[[], Any],
        at_once: Callable[[Callable[[], Any]], Any] | None = None,
    ):
        self.name = name
        self._attempt = attempt
        # Where each item is written at once, when it cannot wait for a thread of its own:
        # in an atomic step's transaction, or in a transaction the execution runs in (a
        # TestCase's), whose locks such a thread would wait for.
        self._at_once = at_once
        self._using = using
        self._instance_id = instance_id
        self._now = now
        self._pending: list[Any] = []
        self._busy = False  # a batch is being written
        self._ended = False
        self._error: BaseException | None = None
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"<StepStream {self.name!r}>"

    def write(self, value: Any) -> None:
        """Append `value` (JSON) to the stream, written within a few milliseconds. Raises
        TypeError for a value that is not JSON; WorkflowStreamFullError (past STREAMS' bounds)
        or WorkflowStateError (the stream is closed) when the store refused an earlier batch,
        or this item where it is written at once."""
        value = plain_json(value, f'An item of the stream "{self.name}"', nul=True)
        if self._at_once is not None:
            self._at_once(lambda: self._append([value]))
            return
        with self._changed:
            self._raise_error()
            if self._ended:
                raise errors.WorkflowStateError(
                    f'The stream "{self.name}" was closed by this step: nothing more can be '
                    "written to it."
                )
            self._pending.append(value)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._flusher, name=f"stream {self.name}", daemon=True
                )
                self._thread.start()
            self._changed.notify_all()

    def flush(self) -> None:
        """Wait until every item written so far is stored; raise what the store refused."""
        with self._changed:
            while self._pending or self._busy:
                self._changed.wait(0.1)
            self._raise_error()

    def close(self) -> None:
        """Write what is pending, then end the stream: readers stop after its last item."""
        self.flush()
        with self._changed:
            self._ended = True
            self._changed.notify_all()
        self._close_now()

    def end(self) -> None:
        """The step's function returned or raised: stop the writer thread once it is done."""
        try:
            self.flush()
        finally:
            with self._changed:
                self._ended = True
                self._changed.notify_all()
            if self._thread is not None:
                self._thread.join()

    def _raise_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            self._pending.clear()
            raise error

    def _flusher(self) -> None:
        try:
            while True:
                with self._changed:
                    while not self._pending and not self._ended:
                        self._changed.wait()
                    if not self._pending:
                        return
                    linger = not self._ended and len(self._pending) < BATCH
                if linger:
                    time.sleep(LINGER)  # more items of a burst join the batch
                with self._changed:
                    batch, self._pending = self._pending[:BATCH], self._pending[BATCH:]
                    self._busy = True
                try:
                    self._append(batch)
                except BaseException as error:  # handed to the step's thread
                    with self._changed:
                        self._error = error
                        self._pending.clear()
                finally:
                    with self._changed:
                        self._busy = False
                        self._changed.notify_all()
        finally:
            connections.close_all()  # this thread's own connections only

    def _append(self, values: list[Any]) -> None:
        store.append(
            self._using,
            self._instance_id,
            self.name,
            values,
            attempt=self._attempt,
            now=self._now(),
        )

    def _close_now(self) -> None:
        def close() -> None:
            store.close(self._using, self._instance_id, self.name, now=self._now())

        if self._at_once is not None:
            self._at_once(close)
        else:
            close()
