"""The threads of one execution: the calls other threads hand to the execution's own thread
(whose database connection it uses), and the gate that starts a step only once no other
thread runs workflow code. Gather branches and timed steps run in threads of their own."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .stops import Suspension


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


class StartGate:
    """Counts the threads running workflow code (not parked at a step's start, inside a step,
    waiting for gather branches, or ended): a new step starts only once it is 0."""

    def __init__(self) -> None:
        self._active = 1
        self._quiet = threading.Condition()

    def enter_step(self, suspension: Suspension) -> bool:
        """Before a step attempt starts: wait until no other thread runs workflow code, then
        True (the thread runs workflow code again) if one of them parked the instance. So a
        step in the same gather as a sleep or a wait starts after it, at every execution alike,
        whichever branch's thread runs first; and steps that reach their start together all
        start. Pair a False with leave_step()."""
        with self._quiet:
            self._active -= 1
            self._quiet.notify_all()
            self._quiet.wait_for(lambda: self._active <= 0)
            if suspension.pending:
                self._active += 1
                return True
            return False

    def leave_step(self) -> None:
        """The thread that passed enter_step() runs workflow code again."""
        with self._quiet:
            self._active += 1

    def change(self, delta: int) -> None:
        """`delta` more threads run workflow code (fewer, when negative)."""
        with self._quiet:
            self._active += delta
            self._quiet.notify_all()
