"""PostgreSQL: a signal (Backend.signal_by_routine) as the database's own function
`dw_signal_v1`: under the signal lock, the earlier signal of the same name and dedupe id if
there is one, else the INSERT, the wake-up of the instances waiting for it (a statement after
the lock, so it sees every wait committed before) and a NOTIFY. Outside a transaction it is one
round trip where a transaction took five (BEGIN, the signal lock, the INSERT with its wake-up,
the NOTIFY, COMMIT); inside the caller's, one where it took three (the lock, the INSERT, the
NOTIFY), the lock held and the NOTIFY sent at the caller's commit as before. The function is
the frozen file `sql/dw_signal_v1.sql`, created by migration 0004_signal_routine. Where it is
missing, or the connection's role may not call it, signal() sends the statements as before."""

from __future__ import annotations

from ..writes import Routines
from .writes import callable_functions

SIGNATURE = "dw_signal_v1(varchar, varchar, varchar, jsonb, timestamptz)"
"""dw_signal_v1's parameters: the signal's name, key, dedupe id, payload (as stored) and time."""

SIGNAL_CALL = "SELECT * FROM dw_signal_v1(%s, %s, %s, %s, %s)"
"""dw_signal_v1's call: one row, (its id, how many woken, whether it is new, its key)."""


def signal_function() -> Routines:
    """Whether the database has dw_signal_v1 and the connection's role may call it."""
    return callable_functions([SIGNATURE])
