"""PostgreSQL: a start (Backend.start_alone) as the database's own function `dw_start_v1`: the
instance's INSERT unless its id exists, its signal cursor read in it, and a NOTIFY when it
inserted; outside a transaction, or inside the caller's (the NOTIFY then sent at its commit).
The function is the frozen file `sql/dw_start_v1.sql`, created by migration
0003_start_routine; its parameters are the instance's columns in started_row()'s order, so a
changed model is a new version of the file (tests/store/test_start_function.py compares the
two).

The statement it replaces is planned again at each call. PL/pgSQL plans the function's INSERT
once per session, and the call holds nothing on the connection, so it works behind a pooler too
(where a prepared statement would pin the session of some of them). 3,000 starts a round from
one thread on this project's two-core machine, back to back: 0.21-0.23 ms of the server's CPU
per start against 0.35-0.39 ms, and 0.48-0.52 ms of wall time against 0.64-0.69 ms
(benchmarks/start_cpu.py, docs/discussions/performance.md). Where the function is missing, or
the connection's role may not call it, the statement is sent.
"""

from __future__ import annotations

from ..writes import Routines
from .writes import callable_functions

SIGNATURE = (
    "dw_start_v1(varchar, varchar, integer, varchar, jsonb, jsonb, jsonb, jsonb, timestamptz, "
    "timestamptz, integer, varchar, varchar, varchar, varchar, timestamptz, varchar, varchar, "
    "varchar, integer, varchar, varchar, timestamptz, boolean, boolean, text, boolean, boolean, "
    "boolean, boolean, integer, varchar, integer, varchar, timestamptz, timestamptz)"
)
"""dw_start_v1's parameters: the instance's columns but its signal cursor."""

_PARAMETERS = SIGNATURE[SIGNATURE.index("(") + 1 : -1].split(", ")

START_CALL = f"SELECT dw_start_v1({', '.join(['%s'] * len(_PARAMETERS))})"
"""dw_start_v1's call: started_row()'s parameters; one row, whether it inserted."""


def start_function() -> Routines:
    """Whether the database has dw_start_v1 and the connection's role may call it."""
    return callable_functions([SIGNATURE])
