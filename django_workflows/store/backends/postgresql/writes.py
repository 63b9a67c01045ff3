"""PostgreSQL: the lease holder's write as one statement, and its two most frequent forms also as
functions of the database's own: `dw_journal_write_v1`, journal entries alone (a step started or
ended), and `dw_final_write_v1`, the last write of an instance that ends (its last entries, its
status and outcome, its lease let go, and its end announced).

The functions are the frozen files `sql/dw_journal_write_v1.sql` and `sql/dw_final_write_v1.sql`,
created by migration 0002_routines (store/backends/routines.py). A changed function is a new
file with the next version (`dw_final_write_v2`) and a new migration that creates it, and the
calls here then name the new version; the statement sent where the functions are missing
(held(), written()) is Python, and changes with the models.

Sent as text with its values inlined, as Django's default client-side binding sends every
statement, the write is planned again each time: 0.44-0.55 ms of the server's CPU per journal
write on this project's two-core machine, against 0.26-0.30 ms through the function, whose
statement PL/pgSQL plans once per session and then runs from its cached plan, as prepared
statements would (0.24-0.33 ms). Unlike prepared statements it needs nothing of the connection,
so it works behind PgBouncer in transaction mode too. Where the functions are missing (a test
database made without migrations), the write is sent as a statement.
"""

from __future__ import annotations

from ....models import JournalEntry, WorkflowInstance
from ..writes import Routines

FLAGS = "cancel_requested, terminate_requested, cancel_reason"
_JOURNAL = "dw_journal_write_v1(text, text, jsonb)"
_FINAL = "dw_final_write_v1(text, text, jsonb, text, jsonb, jsonb, timestamptz)"

JOURNAL_CALL = f"SELECT {FLAGS} FROM dw_journal_write_v1(%s, %s, %s::jsonb)"
"""dw_journal_write_v1's call: the instance id, the lease token and the entries (as written()
reads them); one row of the lease's flags, or none when the lease is gone."""

FINAL_CALL = (
    f"SELECT {FLAGS} FROM dw_final_write_v1(%s, %s, %s::jsonb, %s, %s::jsonb, %s::jsonb, "
    f"%s::timestamptz)"
)
"""dw_final_write_v1's call: as JOURNAL_CALL's, then the final status, the output and the error
(JSON, or NULL) and the time of the write."""


def held(id: str, token: str) -> str:
    """`WITH held AS (...)`: the instance's row, locked, while `token` (a placeholder, as `id`)
    is its lease token."""
    return (
        f"WITH held AS (SELECT id, {FLAGS}, awaited FROM {WorkflowInstance._meta.db_table} "
        f"WHERE id = {id} AND lease_token = {token} FOR UPDATE)"
    )


def written(entries: str) -> str:
    """`, written AS (...)`: upsert the journal entries of `entries` (a placeholder for a JSON
    array of {name, document, guarded}), in their order. One row per name: a `guarded`
    document is written unless a cancel or terminate is requested, else `document`."""
    chosen = (
        "COALESCE(CASE WHEN NOT (held.cancel_requested OR held.terminate_requested) "
        "THEN e.guarded END, e.document)"
    )
    return (
        f", written AS (INSERT INTO {JournalEntry._meta.db_table} (instance_id, name, document) "
        f"SELECT held.id, e.name, {chosen} FROM held, ROWS FROM (jsonb_to_recordset({entries}) "
        f"AS (name text, document jsonb, guarded jsonb)) WITH ORDINALITY "
        f"AS e(name, document, guarded, n) WHERE {chosen} IS NOT NULL ORDER BY e.n "
        f"ON CONFLICT (instance_id, name) DO UPDATE SET document = EXCLUDED.document "
        f"RETURNING 1)"
    )


def callable_functions(signatures: list[str]) -> Routines:
    """Whether the database has the functions of `signatures` and the connection's role may
    call them all (a database whose default privileges revoke EXECUTE from PUBLIC may not grant
    it to the role the application connects as)."""
    return Routines(
        "SELECT bool_and(COALESCE(has_function_privilege(to_regprocedure(f), 'EXECUTE'), false)) "
        "FROM unnest(%s::text[]) AS f",
        [signatures],
    )


def functions() -> Routines:
    """Whether the database has the two write functions and the role may call them."""
    return callable_functions([_JOURNAL, _FINAL])
