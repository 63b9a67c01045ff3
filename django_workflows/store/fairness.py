"""Fair share: a start with a fair key is due at its key's turn.

A claim takes the due instances by priority, then by wake time (store/claims.py). A start
with a fair key (@workflow(fair_key=...), start(fair_key=...)) that is due at once gets, as
its wake time, its key's turn rather than the time of the start:

    turn = min(now, max(head, last + TURN))    while its key has an instance waiting
    turn = min(now, head)                      while it has none

`head`: the wake time of the oldest instance of its queue and priority that no lease holds,
the front of the line. `last`: the wake time of its key's latest due instance that never ran.
So the first instance of a key goes to the front of the line; the next of the same key goes
one TURN after the last, and the keys with instances waiting take turns, one TURN of the line
each (start-time fair queueing, with the line's front as the virtual time). Never later than
now: the instance is due at once, whatever the keys ahead of it. When the front is now itself
(a clock that stands still, as a test's ManualClock does), a key with nothing waiting goes
one TURN before it, so that it is not left to the order of the ids.

The claim itself is unchanged: its order, its indexes and its cost do not depend on the
keys. A keyed start reads two index entries more, in one statement: the line's front
(dw_instance_queue_due) and its key's latest (dw_instance_fair). Two concurrent starts of one key may read the same latest
instance and take the same turn; the one created first is claimed first.

An instance that waits and wakes again, and a start that is due later (a task's run_after,
a debounce) keep their place by time: only a start that is due at once takes a turn.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import connections

from ..models import WorkflowInstance
from .backends import backend, driver

TURN = timedelta(microseconds=1)
"""How far apart the turns of one key are: the smallest step of a stored time."""


def take_turns(using: str, instances: Iterable[WorkflowInstance]) -> None:
    """Set the wake time of each instance with a fair key that is due at its start (wake_at
    not after created_at) to its key's turn, in order: the second of one key in `instances`
    takes its turn after the first. Inside the start's transaction, before the INSERT."""
    heads: dict[tuple[str, int], datetime | None] = {}
    lasts: dict[str, datetime | None] = {}
    for instance in instances:
        key, now = instance.fair_key, instance.created_at
        if key is None or instance.wake_at is None or instance.wake_at > now:
            continue
        line = (instance.queue, instance.priority)
        if line not in heads or key not in lasts:
            head, last = _read(using, *line, key, now)
            heads.setdefault(line, head)
            lasts.setdefault(key, last)
        head = heads[line]
        instance.wake_at = lasts[key] = _turn(now, head, lasts[key])
        if head is None or instance.wake_at < head:
            heads[line] = instance.wake_at


def _turn(now: datetime, head: datetime | None, last: datetime | None) -> datetime:
    """A keyed start's wake time, from the line's front and its key's latest (see above)."""
    if last is not None:
        return min(now, max(last + TURN, last if head is None else head))
    if head is None or head > now:
        return now
    return head - TURN if head == now else head


_READ = (
    "SELECT (SELECT wake_at FROM {table} {line_index} WHERE queue = %s AND priority = %s "
    "AND parked = %s AND lease_until IS NULL AND wake_at IS NOT NULL ORDER BY wake_at LIMIT 1), "
    "(SELECT wake_at FROM {table} {key_index} WHERE fair_key = %s AND runs = 0 "
    "AND wake_at <= %s ORDER BY wake_at DESC LIMIT 1)"
)
"""The line's front: the wake time of the oldest instance of the queue and priority that no
lease holds and is not parked, due or not (a later one than now changes no turn), the first
entry of the line's range in dw_instance_queue_due. The key's latest: the wake time of its
latest due instance that never ran (runs 0: never claimed, so no lease holds it), the last
entry before now of the key's range in dw_instance_fair. One statement: as two ORM queries
they cost a start 1.4 ms, as this one 0.46 ms (PostgreSQL, `claim_scale.py --fair-keys
10000`)."""


def _read(
    using: str, queue: str, priority: int, key: str, now: datetime
) -> tuple[datetime | None, datetime | None]:
    """The line's front and the key's latest (_READ), as the ORM would read them."""
    connection = connections[using]
    hint = backend(using).index_hint
    sql = _READ.format(
        table=WorkflowInstance._meta.db_table,
        line_index=hint("dw_instance_queue_due"),
        key_index=hint("dw_instance_fair"),
    )
    at = connection.ops.adapt_datetimefield_value(now)
    row = driver.fetch(connection, sql, [queue, priority, False, key, at])[0]
    column = WorkflowInstance._meta.get_field("wake_at").get_col(WorkflowInstance._meta.db_table)
    functions = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
    values = []
    for value in row:
        for function in functions:
            value = function(value, column, connection)
        values.append(value)
    return values[0], values[1]
