"""The threads of one execution: the calls other threads hand to the execution's own thread
(whose database connection it uses), and the gate that starts a step only once no other
thread runs workflow code. Gather branches and timed steps run in threads of their own."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class OwnerCalls:
    """Store calls made from other threads, run on the owner's thread (`owner`, an ident)."""

    def __init__(self, owner: int):
        self.owner = owner
        self._requests: queue.Queue[Any] = queue.Queue()

    def run(self, fn: Callable[[], Any]) -> Any:
        """`fn()` on the owner's thread: at once on it, else handed to it and waited for."""
        if threading.get_ident() == self.owner:
            return fn()
        return self.submit(fn).result()

    def submit(self, fn: Callable[[], Any]) -> Future[Any]:
        """Hand `fn()` to the owner's thread without waiting: its Future (an event loop awaits
        it, see coroutines.py)."""
        future: Future[Any] = Future()
        self._requests.put((fn, future))
        return future

    def serve(self, timeout: float) -> None:
        """On the owner's thread: run what other threads asked for, up to `timeout` seconds."""
        if threading.get_ident() != self.owner:
            time.sleep(min(timeout, 0.05))
            return
        try:
            item = self._requests.get(timeout=timeout)
        except queue.Empty:
            return
        while item is not None:
            fn, future = item
            if fn is not None:
                try:
                    future.set_result(fn())
                except BaseException as error:  # handed to the thread that asked
                    future.set_exception(error)
            try:
                item = self._requests.get_nowait()
            except queue.Empty:
                item = None

    def wake(self) -> None:
        """End the owner's serve() now: a thread it waits for finished."""
        self._requests.put((None, None))


@dataclass
class Suspension:
    """Where the instance parks once its code stops: the earliest wake-up and the waits."""

    pending: bool = False
    wake_at: datetime | None = None
    waits: list[tuple[str, str | None]] = field(default_factory=list)


class StartGate:
    """Counts the threads running workflow code (not parked at a step's start, inside a step,
    waiting for gather branches, or ended): a new step starts only once it is 0.

    The threads waiting at a step's start are released at the moment the count reaches 0, each
    told then whether the instance is parked: a waiter slow to get the lock back still starts
    with the others, even if one of them has meanwhile run its step and parked the instance."""

    def __init__(self, suspension: Suspension) -> None:
        self._suspension = suspension
        self._active = 1
        self._waiting: list[_Ticket] = []
        self._quiet = threading.Condition()

    def enter_step(self) -> bool:
        """Before a step attempt starts: wait until no other thread runs workflow code, then
        True (the thread runs workflow code again) if one of them parked the instance. So a
        step in the same gather as a sleep or a wait starts after it, at every execution alike,
        whichever branch's thread runs first; and steps that reach their start together all
        start. Pair a False with leave_step()."""
        ticket = _Ticket()
        with self._quiet:
            self._waiting.append(ticket)
            self._active -= 1
            self._release_if_quiet()
            self._quiet.wait_for(lambda: ticket.parked is not None)
        return bool(ticket.parked)

    def leave_step(self) -> None:
        """The thread that passed enter_step() runs workflow code again."""
        with self._quiet:
            self._active += 1

    def change(self, delta: int) -> None:
        """`delta` more threads run workflow code (fewer, when negative)."""
        with self._quiet:
            self._active += delta
            self._release_if_quiet()

    def _release_if_quiet(self) -> None:
        """Under the lock: once no thread runs workflow code, release every waiter with the
        instance's parking as it is now; those that will raise Suspend run workflow code."""
        if self._active > 0 or not self._waiting:
            return
        parked = self._suspension.pending
        for ticket in self._waiting:
            ticket.parked = parked
        if parked:
            self._active += len(self._waiting)
        self._waiting.clear()
        self._quiet.notify_all()


class _Ticket:
    """A thread waiting at a step's start: whether the instance was parked when it was let
    through (None while it waits)."""

    __slots__ = ("parked",)

    def __init__(self) -> None:
        self.parked: bool | None = None
