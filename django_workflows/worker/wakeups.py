"""Waking a worker within WORKER['WAKEUP_INTERVAL'] of a start or signal committed in another
process, where the database has no notifications (SQLite, MySQL, MariaDB; PostgreSQL LISTENs).

The starts and signals count their wake-ups in the WakeupCounter rows, in their own
transaction (Backend.notify); a thread of the worker reads the counts once per interval
(Backend.wakeup_mark: on SQLite a PRAGMA data_version, and only when another connection
committed the counts and the instance table's last rowid, which a start outside a transaction
moves on instead of counting; elsewhere one primary-key range read) and wakes the worker's loop
when they change.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db import connections

from ..store.backends import backend

logger = logging.getLogger("django_workflows")

RETRY_AFTER = 5.0
"""Seconds before the next look after a failed one (the database down, say)."""

_UNKNOWN = object()  # no mark read yet (or since a failure): the next one read wakes


def watch(using: str, wake: Callable[[], None], stop: threading.Event, interval: float) -> None:
    """Call `wake()` whenever the wake-up counts of database `using` change, looking every
    `interval` seconds until `stop` is set; then close this thread's connection."""
    database = backend(using)
    mark: Any = _UNKNOWN
    try:
        while not stop.is_set():
            try:
                current = database.wakeup_mark()
            except Exception:
                logger.exception("Reading the wake-up counters failed; retrying in 5s.")
                connections[using].close()
                mark = _UNKNOWN
                stop.wait(RETRY_AFTER)
                continue
            if current != mark:  # the first look wakes too: what committed before it
                mark = current
                wake()
            stop.wait(interval)
    finally:
        connections[using].close()


def start_watcher(
    using: str,
    wake: Callable[[], None],
    stop: threading.Event,
    interval: timedelta | None,
    name: str,
) -> threading.Thread | None:
    """The thread that watches the wake-up counts for a worker, started; None where the
    database has notifications or `interval` is None (the worker waits for its poll)."""
    if interval is None or backend(using).has_listen_notify:
        return None
    thread = threading.Thread(
        target=watch,
        args=(using, wake, stop, interval.total_seconds()),
        name=name,
        daemon=True,
    )
    thread.start()
    return thread
