"""Waking the workers of this process at once when a start or signal commits."""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from django.db import connections, transaction

from .backends import backend
from .backends.base import ENDED_CHANNEL

_events: weakref.WeakSet[threading.Event] = weakref.WeakSet()
_lock = threading.Lock()


def subscribe(event: threading.Event) -> None:
    with _lock:
        _events.add(event)


def unsubscribe(event: threading.Event) -> None:
    with _lock:
        _events.discard(event)


def wake_local_workers() -> None:
    """Set the wake event of every running worker loop of this process."""
    with _lock:
        events = list(_events)
    for event in events:
        event.set()


def wake_local_workers_at_commit(using: str) -> None:
    """wake_local_workers() when the transaction.atomic() on `using` commits, or now outside
    one."""
    if connections[using].in_atomic_block:
        transaction.on_commit(wake_local_workers, using=using)
    else:
        wake_local_workers()


_running: dict[str, list[Any]] = {}


def track(instance_id: str, execution: Any) -> None:
    """Note an execution running in this process, so a local cancel reaches it at once."""
    with _lock:
        _running.setdefault(instance_id, []).append(execution)


def untrack(instance_id: str, execution: Any) -> None:
    with _lock:
        executions = _running.get(instance_id, [])
        if execution in executions:
            executions.remove(execution)
        if not executions:
            _running.pop(instance_id, None)


def cancel_requested(instance_id: str, *, terminate: bool, reason: str | None) -> None:
    """A cancel or terminate of `instance_id` committed: tell its executions in this process.
    Executions in other processes learn of it at their next lease renewal or write."""
    with _lock:
        executions = list(_running.get(instance_id, []))
    for execution in executions:
        execution.note_cancel(terminate=terminate, reason=reason)


_ended: dict[str, threading.Event] = {}


def wait_for_end(instance_id: str, timeout: float) -> None:
    """Sleep up to `timeout` seconds, less if an execution in this process ends the instance."""
    with _lock:
        event = _ended.setdefault(instance_id, threading.Event())
    try:
        event.wait(timeout)
    finally:
        with _lock:
            if _ended.get(instance_id) is event and event.is_set():
                _ended.pop(instance_id, None)


def instance_ended(instance_id: str) -> None:
    """An execution in this process wrote the instance's end: wake result() waiting for it."""
    with _lock:
        event = _ended.get(instance_id)
    if event is not None:
        event.set()


def value_published(instance_id: str) -> None:
    """An execution in this process published a value of the instance (ctx.set_value()):
    wake get_value() waiting for it, which shares result()'s wait (wait_for_end())."""
    instance_ended(instance_id)


_listeners: dict[str, tuple[threading.Event, int]] = {}


def listen_for_ends(using: str) -> None:
    """While result() calls wait in this process, where the database has notifications
    (PostgreSQL), one thread per database wakes them when any process ends an instance (NOTIFY
    at the final write's commit). Pair every call with stop_listening_for_ends(): the last one
    closes the listening connection."""
    database = backend(using)
    if not database.has_listen_notify:
        return
    with _lock:
        stop, waiting = _listeners.get(using, (None, 0))
        if stop is not None:
            _listeners[using] = (stop, waiting + 1)
            return
        stop = threading.Event()
        _listeners[using] = (stop, 1)
    threading.Thread(
        target=database.listen,
        args=(instance_ended, stop, ENDED_CHANNEL),
        name=f"django_workflows result listener ({using})",
        daemon=True,
    ).start()


def stop_listening_for_ends(using: str) -> None:
    with _lock:
        stop, waiting = _listeners.get(using, (None, 0))
        if stop is None:
            return
        if waiting > 1:
            _listeners[using] = (stop, waiting - 1)
            return
        del _listeners[using]
    stop.set()


@contextlib.contextmanager
def ends_listener(using: str) -> Iterator[Callable[[], bool]]:
    """A function that starts listening for ends, the first time (returning whether it started
    them, where the database has notifications); stops listening on exit if it did."""
    started = False

    def listen() -> bool:
        nonlocal started
        if started:
            return False
        started = True
        listen_for_ends(using)
        return backend(using).has_listen_notify

    try:
        yield listen
    finally:
        if started:
            stop_listening_for_ends(using)
