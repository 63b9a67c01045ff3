"""MySQL and MariaDB: the lease holder's two most frequent writes as stored procedures of the
database's own: `dw_journal_write_v1`, journal entries alone (a step started or ended), and
`dw_final_write_v1`, the last write of an instance that ends (its last entries, its final status
and outcome, its lease let go).

The procedures are the frozen files `sql/dw_journal_write_v1.sql` and
`sql/dw_final_write_v1.sql`, created by migration 0002_routines (store/backends/routines.py),
their parameters declared with the types, character sets and collations of the columns they are
compared with as the migration finds them (the exact collations of mysql/collations.py). A
changed procedure is a new file with the next version (`dw_final_write_v2`) and a new migration
that creates it, and the calls here then name the new version.

The batch of statements they replace (mysql_batches.write_statements) has to make each journal
upsert depend on the row lock's read with an `INSERT ... SELECT` from the instance's row, read
again for every entry, since a batch has no branches. A procedure reads the row's flags once
into variables, then upserts the entries with one `INSERT ... VALUES`, and the server parses
its statements once per session: 0.37-0.39 ms of MariaDB's CPU per journal write on this
project's two-core machine, against 0.46-0.52 ms for the batch. Each is called in the same one
round trip, `START TRANSACTION; CALL ...; COMMIT`.

A procedure takes at most two journal rows (journal_rows: a step's end and the next one's
start); a write of more is sent as statements, as is every write where the procedures are
missing (a database made without migrations) or the connection's user may not call them.
"""

from __future__ import annotations

from typing import Any

from ....models import JournalEntry, WorkflowInstance
from ..writes import Routines, routine_for
from .batches import Statement

JOURNAL = "dw_journal_write_v1"
FINAL = "dw_final_write_v1"
_ROWS = 2  # journal rows a call takes
_HELD = 2 + 3 * _ROWS  # the id, the lease token, and each row's name and two documents
_ENDED = 4  # the final status, the output, the error and the time

JOURNAL_CALL = f"CALL {JOURNAL}({', '.join(['%s'] * _HELD)})"
FINAL_CALL = f"CALL {FINAL}({', '.join(['%s'] * (_HELD + _ENDED))})"


def callable_procedures(names: list[str]) -> Routines:
    """Whether the database has the procedures `names` and the connection's user may call
    them all (information_schema lists to a user the routines it has a privilege on)."""
    return Routines(
        f"SELECT COUNT(*) = {len(names)} FROM information_schema.ROUTINES "
        "WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_TYPE = 'PROCEDURE' "
        f"AND ROUTINE_NAME IN ({', '.join(['%s'] * len(names))})",
        names,
    )


def procedures() -> Routines:
    """Whether the database has both write procedures and the connection's user may call
    them."""
    return callable_procedures([JOURNAL, FINAL])


def call(
    connection: Any, id: str, token: str, rows: list[dict[str, Any]], changes: dict[str, Any]
) -> Statement | None:
    """The CALL of dw_journal_write_v1 or dw_final_write_v1 for a write of journal `rows`
    (journal_rows) and instance `changes` (write_changes, with no wake time to set); None for a
    write neither carries. Its one result set is the lease's flags, or empty when the lease is gone."""
    routine = routine_for(changes, rows)
    if routine is None or len(rows) > _ROWS:
        return None
    document = JournalEntry._meta.get_field("document")
    params: list[Any] = [id, token]
    for n in range(_ROWS):
        row = rows[n] if n < len(rows) else {}
        params.append(row.get("name"))
        params += [
            None if row.get(kind) is None else document.get_db_prep_save(row[kind], connection)
            for kind in ("document", "guarded")
        ]
    if routine == "journal":
        return JOURNAL_CALL, params
    instances = WorkflowInstance._meta
    for name in ("status", "output", "error", "updated_at"):
        field: Any = instances.get_field(name)
        params.append(field.get_db_prep_save(changes[name], connection))
    return FINAL_CALL, params
