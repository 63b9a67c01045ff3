"""PostgreSQL: the lease holder's write as one statement, and its two most frequent forms also as
functions of the database's own (migration 0016): `dw_journal_write`, journal entries alone (a
step started or ended), and `dw_final_write`, the last write of an instance that ends (its last
entries, its status and outcome, its lease let go, and its end announced).

Sent as text with its values inlined, as Django's default client-side binding sends every
statement, the write is planned again each time: 0.44-0.55 ms of the server's CPU per journal
write on this project's two-core machine, against 0.26-0.30 ms through the function, whose
statement PL/pgSQL plans once per session and then runs from its cached plan, as prepared
statements would (0.24-0.33 ms). Unlike prepared statements it needs nothing of the connection,
so it works behind PgBouncer in transaction mode too. Where the functions are missing (a test
database made without migrations), the write is sent as a statement.
"""

from __future__ import annotations

from typing import Any

from ....models import JournalEntry, WorkflowInstance
from ..base import ENDED_CHANNEL
from ..writes import Routines

FLAGS = "cancel_requested, terminate_requested, cancel_reason"
_JOURNAL = "dw_journal_write(text, text, jsonb)"
_FINAL = "dw_final_write(text, text, jsonb, text, jsonb, jsonb, timestamptz)"

JOURNAL_CALL = f"SELECT {FLAGS} FROM dw_journal_write(%s, %s, %s::jsonb)"
"""dw_journal_write's call: the instance id, the lease token and the entries (as written()
reads them); one row of the lease's flags, or none when the lease is gone."""

FINAL_CALL = (
    f"SELECT {FLAGS} FROM dw_final_write(%s, %s, %s::jsonb, %s, %s::jsonb, %s::jsonb, "
    f"%s::timestamptz)"
)
"""dw_final_write's call: as JOURNAL_CALL's, then the final status, the output and the error
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


def _function(signature: str, body: str) -> str:
    return (
        f"CREATE OR REPLACE FUNCTION {signature} RETURNS TABLE (cancel_requested boolean, "
        f"terminate_requested boolean, cancel_reason text) LANGUAGE plpgsql VOLATILE AS $fn$\n"
        # the flags' names are both the result's columns and the instance's
        f"#variable_conflict use_column\n{body}\n$fn$"
    )


def final_query() -> str:
    """dw_final_write's query (parameters $1 to $7, as FINAL_CALL's): lock the row, upsert the
    entries, end the instance and let its lease go; the row's id, flags and `awaited`."""
    ended = (
        f", changed AS (UPDATE {WorkflowInstance._meta.db_table} AS i SET status = $4, "
        f"output = $5, error = $6, lease_token = NULL, lease_until = NULL, wake_at = NULL, "
        f"updated_at = $7 FROM held WHERE i.id = held.id RETURNING 1)"
    )
    return f"{held('$1', '$2')}{written('$3')}{ended} SELECT id, {FLAGS}, awaited FROM held"


ANNOUNCED_FLAGS = (
    # result() and get_value() in other processes wake at the commit
    f"IF r.awaited THEN PERFORM pg_notify('{ENDED_CHANNEL}', r.id); END IF;\n"
    f"cancel_requested := r.cancel_requested; "
    f"terminate_requested := r.terminate_requested; cancel_reason := r.cancel_reason;\n"
)
"""PL/pgSQL: announce the end of row `r` of final_query() where awaited, and set the flags."""


def create_functions(schema_editor: Any) -> None:
    """Create (or replace) dw_journal_write and dw_final_write, each a set of the lease's
    flags (one row, or none when the lease is gone)."""
    journal = f"{held('$1', '$2')}{written('$3')} SELECT {FLAGS} FROM held"
    schema_editor.execute(_function(_JOURNAL, f"BEGIN RETURN QUERY {journal}; END"))
    schema_editor.execute(
        _function(
            _FINAL,
            f"DECLARE r record;\nBEGIN FOR r IN {final_query()} LOOP\n{ANNOUNCED_FLAGS}"
            f"RETURN NEXT; END LOOP; END",
        )
    )


def drop_functions(schema_editor: Any) -> None:
    for signature in (_JOURNAL, _FINAL):
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {signature}")


def functions() -> Routines:
    """Whether the database has the functions and the connection's role may call them (a
    database whose default privileges revoke EXECUTE from PUBLIC may not grant it to the role
    the application connects as)."""
    return Routines(
        "SELECT bool_and(COALESCE(has_function_privilege(to_regprocedure(f), 'EXECUTE'), false)) "
        "FROM unnest(%s::text[]) AS f",
        [[_JOURNAL, _FINAL]],
    )
