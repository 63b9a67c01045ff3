"""MySQL and MariaDB: the lease holder's two most frequent writes as stored procedures of the
database's own (migration 0017): `dw_journal_write`, journal entries alone (a step started or
ended), and `dw_final_write`, the last write of an instance that ends (its last entries, its
final status and outcome, its lease let go).

The batch of statements they replace (mysql_batches.write_statements) has to make each journal
upsert depend on the row lock's read with an `INSERT ... SELECT` from the instance's row, read
again for every entry, since a batch has no branches. A procedure reads the row's flags once
into variables, then upserts the entries with one `INSERT ... VALUES`, and the server parses
its statements once per session: 0.37-0.39 ms of MariaDB's CPU per journal write on this
project's two-core machine, against 0.46-0.52 ms for the batch. Each is called in the same one
round trip, `START TRANSACTION; CALL ...; COMMIT`.

A procedure takes at most two journal rows (journal_rows: a step's end and the next one's
start); a write of more is sent as statements, as is every write where the procedures are
missing (a database made without migrations) or the connection's user may not call them. The
procedures' parameters have the types, character sets and collations that the columns they are
compared with have when the migration creates them (the exact collations of
mysql_collations.py): a later change of those columns needs the procedures made again
(`create_procedures()`).
"""

from __future__ import annotations

from typing import Any

from ....models import JournalEntry, WorkflowInstance
from ..writes import Routines, routine_for
from .batches import Statement

JOURNAL = "dw_journal_write"
FINAL = "dw_final_write"
_ROWS = 2  # journal rows a call takes
_FLAGS = "cancel_requested, terminate_requested, cancel_reason"
_HELD = 2 + 3 * _ROWS  # the id, the lease token, and each row's name and two documents
_ENDED = 4  # the final status, the output, the error and the time

JOURNAL_CALL = f"CALL {JOURNAL}({', '.join(['%s'] * _HELD)})"
FINAL_CALL = f"CALL {FINAL}({', '.join(['%s'] * (_HELD + _ENDED))})"


def procedures() -> Routines:
    """Whether the database has both procedures and the connection's user may call them
    (information_schema lists to a user the routines it has a privilege on)."""
    return Routines(
        "SELECT COUNT(*) = 2 FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() "
        "AND ROUTINE_TYPE = 'PROCEDURE' AND ROUTINE_NAME IN (%s, %s)",
        [JOURNAL, FINAL],
    )


def call(
    connection: Any, id: str, token: str, rows: list[dict[str, Any]], changes: dict[str, Any]
) -> Statement | None:
    """The CALL of dw_journal_write or dw_final_write for a write of journal `rows` (journal_rows)
    and instance `changes` (write_changes, with no wake time to set); None for a write neither
    carries. Its one result set is the lease's flags, or empty when the lease is gone."""
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


def create_procedures(schema_editor: Any) -> None:
    """Create (or make again) dw_journal_write and dw_final_write."""
    drop_procedures(schema_editor)
    with schema_editor.connection.cursor() as cursor:
        instance = _column_types(cursor, WorkflowInstance._meta.db_table)
        journal = _column_types(cursor, JournalEntry._meta.db_table)
    held = [f"IN p_id {instance['id']}", f"IN p_token {instance['lease_token']}"]
    for n in range(1, _ROWS + 1):
        held += [
            f"IN p_name{n} {journal['name']}",
            f"IN p_document{n} {journal['document']}",
            f"IN p_guarded{n} {journal['document']}",
        ]
    declared = (
        f"DECLARE v_found BOOLEAN DEFAULT TRUE;\n"
        f"DECLARE v_cancel, v_terminate BOOLEAN;\n"
        f"DECLARE v_reason {instance['cancel_reason']};\n"
        f"DECLARE v_first, v_second {journal['document']};\n"
        f"DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_found = FALSE;\n"
    )
    table = WorkflowInstance._meta.db_table
    locked = (
        f"SELECT {_FLAGS} INTO v_cancel, v_terminate, v_reason FROM {table} "
        f"WHERE id = p_id AND lease_token = p_token FOR UPDATE;\n"
    )
    flags = "SELECT v_cancel, v_terminate, v_reason FROM DUAL WHERE v_found;\n"
    journal_body = f"IF v_found THEN\n{_written()}END IF;\n"
    _create(schema_editor, JOURNAL, held, declared + locked + journal_body + flags)
    ended = [
        f"IN p_status {instance['status']}",
        f"IN p_output {instance['output']}",
        f"IN p_error {instance['error']}",
        f"IN p_now {instance['updated_at']}",
    ]
    final_body = (
        f"IF v_found THEN\n{_written()}"
        f"UPDATE {table} SET status = p_status, output = p_output, error = p_error, "
        f"lease_token = NULL, lease_until = NULL, wake_at = NULL, updated_at = p_now "
        f"WHERE id = p_id;\nEND IF;\n"
    )
    _create(schema_editor, FINAL, held + ended, declared + locked + final_body + flags)


def drop_procedures(schema_editor: Any) -> None:
    for name in (JOURNAL, FINAL):
        schema_editor.execute(f"DROP PROCEDURE IF EXISTS {name}")


def _written() -> str:
    """Upsert the rows of the call's parameters in one statement, in their order: a row's
    guarded document unless a cancel or terminate is requested, else its document; a row with
    neither (or no row) writes nothing."""
    journal = JournalEntry._meta.db_table
    upsert = "ON DUPLICATE KEY UPDATE document = VALUES(document)"
    stop = "(v_cancel OR v_terminate)"

    def values(*ns: int) -> str:
        return ", ".join(f"(p_id, p_name{n}, v_{'first' if n == 1 else 'second'})" for n in ns)

    return (
        f"SET v_first = IF(p_guarded1 IS NOT NULL AND NOT {stop}, p_guarded1, p_document1);\n"
        f"SET v_second = IF(p_guarded2 IS NOT NULL AND NOT {stop}, p_guarded2, p_document2);\n"
        f"IF v_first IS NOT NULL AND v_second IS NOT NULL THEN\n"
        f"INSERT INTO {journal} (instance_id, name, document) VALUES {values(1, 2)} {upsert};\n"
        f"ELSEIF v_first IS NOT NULL THEN\n"
        f"INSERT INTO {journal} (instance_id, name, document) VALUES {values(1)} {upsert};\n"
        f"ELSEIF v_second IS NOT NULL THEN\n"
        f"INSERT INTO {journal} (instance_id, name, document) VALUES {values(2)} {upsert};\n"
        f"END IF;\n"
    )


def _create(schema_editor: Any, name: str, parameters: list[str], body: str) -> None:
    # SQL SECURITY INVOKER: the caller's own rights on the tables, whoever created them
    schema_editor.execute(
        f"CREATE PROCEDURE {name}({', '.join(parameters)}) MODIFIES SQL DATA "
        f"SQL SECURITY INVOKER\nBEGIN\n{body}END"
    )


def _column_types(cursor: Any, table: str) -> dict[str, str]:
    """Each column of `table` as a parameter or variable of its type, character set and
    collation is declared."""
    cursor.execute(
        "SELECT COLUMN_NAME, COLUMN_TYPE, CHARACTER_SET_NAME, COLLATION_NAME "
        "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s",
        [table],
    )
    return {
        name: f"{type} CHARACTER SET {charset} COLLATE {collation}" if charset else type
        for name, type, charset, collation in cursor.fetchall()
    }
