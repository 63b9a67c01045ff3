"""The connections a long-running thread (a worker's, the lease renewer's, the schedule
runner's) keeps between its transactions, kept usable as Django's request cycle would."""

from __future__ import annotations

import time

from django.db import connections


def refresh_connections() -> None:
    """Around each execution and renewal: close this thread's connections that broke, or that
    outlived a CONN_MAX_AGE above zero. A worker thread keeps its connection between executions
    even at CONN_MAX_AGE = 0, which would otherwise reconnect for every execution."""
    for connection in connections.all(initialized_only=True):
        if connection.connection is None or connection.in_atomic_block:
            continue
        max_age = connection.settings_dict.get("CONN_MAX_AGE") or 0
        if connection.errors_occurred and not connection.is_usable():
            connection.close()
        elif (
            max_age and connection.close_at is not None and time.monotonic() >= connection.close_at
        ):
            connection.close()
