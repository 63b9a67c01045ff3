"""Group commit: the lease holders' writes that a process's threads want to commit at the same
moment, made by one of them in one transaction, one commit for them all.

Where the database has one writer at a time (SQLite), the threads' writes wait for their turn
one after the other anyway, and each commit waits for the disk where `synchronous` is FULL
(Django's default). A thread whose turn comes makes every write queued by then, its own and the
others', in one transaction; the threads whose writes it made find them done when their turn
comes and return at once. Nothing returns before its write is committed: a write is as durable
as in a transaction of its own. If any write of a group fails, the group's transaction is rolled
back and its writes are made again one by one, each in a transaction of its own, so that each
thread gets its own write's outcome.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from django.db import DatabaseError, transaction


class _Queued:
    """One thread's write, waiting in the queue: its job, then its result or error."""

    __slots__ = ("job", "done", "result", "error")

    def __init__(self, job: Callable[[], Any]) -> None:
        self.job = job
        self.done = threading.Event()  # made (committed or failed)
        self.result: Any = None
        self.error: BaseException | None = None


class GroupCommit:
    """The writes of one database alias, committed in groups (module docstring), each group at
    this process's turn to write (`turn`)."""

    def __init__(self, alias: str, turn: Callable[[], AbstractContextManager[Any]]) -> None:
        self.alias = alias
        self._turn = turn
        self._queue: list[_Queued] = []
        self._lock = threading.Lock()  # guards the queue only

    def run(self, job: Callable[[], Any]) -> Any:
        """`job`'s result once it is committed, with other threads' writes or alone; its error
        if it failed, or `turn`'s if no turn came before a thread with one took it. `job` runs on the connection of whichever thread commits the group,
        inside its transaction, and may run twice (its first run rolled back): it reads and
        writes only there."""
        queued = _Queued(job)
        with self._lock:
            self._queue.append(queued)
        try:
            with self._turn():
                if not queued.done.is_set():
                    with self._lock:
                        group, self._queue = self._queue, []
                    self._commit(group)
        except Exception:
            # No turn within the busy timeout (_commit() raises no Exception). A write that no
            # thread took was never made, and fails; one that the thread with the turn took
            # is being made: its outcome is this thread's.
            with self._lock:
                if queued in self._queue:
                    self._queue.remove(queued)
                    raise
            queued.done.wait()
        if queued.error is not None:
            raise queued.error
        return queued.result

    def _commit(self, group: list[_Queued]) -> None:
        try:
            if len(group) > 1:
                try:
                    with transaction.atomic(using=self.alias, savepoint=False):
                        results = [queued.job() for queued in group]
                except Exception:
                    pass  # made again one by one, below
                else:
                    for queued, result in zip(group, results, strict=True):
                        queued.result = result
                        queued.done.set()
                    return
            for queued in group:
                try:
                    with transaction.atomic(using=self.alias, savepoint=False):
                        queued.result = queued.job()
                except Exception as error:
                    queued.error = error
                queued.done.set()
        except BaseException as error:  # a KeyboardInterrupt: this thread's, raised here
            for queued in group:
                if not queued.done.is_set():
                    queued.error = DatabaseError(f"the write was not made: {error!r}")
                    queued.done.set()
            raise
