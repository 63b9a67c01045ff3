"""Waking the workers of this process at once when a start or signal commits."""

from __future__ import annotations

import threading
import weakref

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
