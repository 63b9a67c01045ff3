"""get_value(): read a value an instance published with ctx.set_value(), waiting for it if asked.

A client call, on the caller's connection, like result(): it waits the way result() does (the
in-process wake-up when an execution of this process publishes, PostgreSQL's NOTIFY when one
in another process does, and a poll that backs off to one second in any case).
"""

from __future__ import annotations

import time
from typing import Any

from ..conf import database_alias
from ..durations import Duration, parse_duration
from ..errors import WorkflowNotFoundError, WorkflowResultTimeoutError
from ..jsonvalues import check_lookup
from ..models import FINISHED
from ..store import instances as store
from ..store import wakeups
from ..store.published import latest_value


def get_value(
    id: str, name: str, *, timeout: Duration | None = None, using: str | None = None
) -> Any:
    """The latest value `name` that instance `id` published with ctx.set_value(), while it
    runs and after it ended.

    Without `timeout`, raises KeyError when the instance has not published `name`. With one,
    waits for it to be published, and raises WorkflowResultTimeoutError past `timeout`
    (wall-clock; the instance keeps running) or KeyError at once when the instance has ended
    without publishing it. Raises WorkflowNotFoundError for an unknown id, TypeError for a
    name that is not a non-empty string, ValueError for a bad timeout.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"get_value() needs a non-empty string name, got {name!r}.")
    if not isinstance(id, str):
        raise TypeError(f"get_value() needs an instance id (a string), got {id!r}.")
    check_lookup("The instance id", id)
    check_lookup("The value's name", name)
    using = database_alias(using)
    limit = None if timeout is None else parse_duration(timeout, "timeout").total_seconds()
    started = time.monotonic()
    pause = 0.02
    with wakeups.ends_listener(using) as listen:
        while True:
            found, value = latest_value(using, id, name)
            if found:
                return value
            row = store.get_instance(using, id)
            if row is None:
                raise WorkflowNotFoundError(f"No workflow instance has the id {id!r}.")
            if limit is None:
                raise KeyError(name)
            if row.status in FINISHED:
                # Read again: the run may have published it and ended between the two reads.
                found, value = latest_value(using, id, name)
                if found:
                    return value
                raise KeyError(name)
            waited = time.monotonic() - started
            if waited >= limit:
                raise WorkflowResultTimeoutError(
                    f"Instance {id!r} did not publish the value {name!r} within {limit:g}s; "
                    f"it keeps running.",
                    instance_id=id,
                    timeout=limit,
                )
            if listen():  # from the first wait on: on PostgreSQL, a NOTIFY at the commit wakes it
                store.mark_awaited(using, id)
            wakeups.wait_for_end(id, min(pause, limit - waited))
            pause = min(pause * 2, 1.0)
