"""MySQL and MariaDB: a signal outside a transaction (Backend.signal_by_routine) as the
database's own procedure `dw_signal_v1`, one round trip where a transaction took seven
(autocommit off, the signal lock, the INSERT, the wake-up's UPDATE, COMMIT, autocommit on, the
wake-up count).

In a transaction of its own, under the signal lock: the earlier signal of the same name and
dedupe id if there is one, else the INSERT and the wake-up of the instances waiting for it;
after its COMMIT, the wake-up count in this thread's counter row. The procedure commits
itself, so it is only ever called in autocommit mode. It is the frozen file
`sql/dw_signal_v1.sql`, created by migration 0005_mysql_signal_routine. Where it is missing,
or the connection's user may not call it, signal() runs in a transaction as before."""

from __future__ import annotations

from ..writes import Routines
from .procedures import callable_procedures

PROCEDURE = "dw_signal_v1"

SIGNAL_CALL = f"CALL {PROCEDURE}(%s, %s, %s, %s, %s, %s)"
"""dw_signal_v1's call: the signal's name, key, dedupe id, payload (as stored) and time, and
the wake-up counter's shard. Its one row: the signal's id, how many woken, whether it is new,
its key, and whether the wake-up was counted (0 when the shard's row does not exist yet)."""


def signal_procedure() -> Routines:
    """Whether the database has dw_signal_v1 and the connection's user may call it."""
    return callable_procedures([PROCEDURE])
