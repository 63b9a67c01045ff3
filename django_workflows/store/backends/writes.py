"""What the hand-written fast writes of the server backends share: which writes may take them,
the columns a write changes, and which writes the database's own routines carry (PostgreSQL's
functions, MySQL's and MariaDB's procedures)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from django.db.models.constants import OnConflict

from ...models import FINISHED, JournalEntry, Status, WorkflowInstance

if TYPE_CHECKING:
    from ..instances import InstanceWrite

UNSET: Any = object()
"""The wake time of a write that does not suspend (write_changes)."""


def fast_writable(write: InstanceWrite) -> bool:
    """Whether a write can take a fast path: it needs no signal lock (records no signal,
    registers or clears no waits), keeps the journal (no restart) and sets no search
    attributes (their rows are the ORM path's)."""
    if write.signal is not None or write.restart or write.attributes:
        return False
    return write.release is None or not (write.release.waits or write.release.had_waits)


def write_changes(write: InstanceWrite) -> tuple[dict[str, Any], Any]:
    """The instance's new column values, and the wake time of a suspension (UNSET if it does
    not suspend): a cancel requested meanwhile makes it due at once, decided under the lock."""
    release = write.release
    changes = dict(write.changes)
    wake_at: Any = UNSET
    if release is not None:
        status = changes.get("status")
        changes.update(lease_token=None, lease_until=None)
        if status in FINISHED:
            changes["wake_at"] = None
        elif status == Status.SUSPENDED and not release.hold:
            wake_at = release.wake_at
        else:
            changes["wake_at"] = release.wake_at
    elif write.lease_until is not None:
        changes["lease_until"] = write.lease_until
    if changes and set(changes) - {"lease_until"} or wake_at is not UNSET:
        changes["updated_at"] = write.now
    return changes, wake_at


def journal_rows(write: InstanceWrite) -> list[dict[str, Any]]:
    """The write's journal entries, one row per name: {name, document, guarded}, either document
    possibly missing. A name can be in both of the write's dicts (a failed attempt's entry and,
    guarded, the next attempt's start), and one upsert may not touch a row twice: the guarded
    document is written unless a cancel or terminate is requested, else `document`."""
    rows: list[dict[str, Any]] = [
        {"name": name, "document": document} for name, document in write.entries.items()
    ]
    at = {row["name"]: row for row in rows}
    for name, document in write.guarded_entries.items():
        if name in at:
            at[name]["guarded"] = document
        else:
            rows.append({"name": name, "guarded": document})
    return rows


FINAL_CHANGES = frozenset(
    {"status", "output", "error", "lease_token", "lease_until", "wake_at", "updated_at"}
)
"""The instance's changes (write_changes) of its last write: the end, its lease let go."""


def routine_for(changes: dict[str, Any], rows: list[dict[str, Any]]) -> str | None:
    """Which of the store's write routines carries a write (of `changes`, as write_changes()
    gives them, of journal `rows`, as journal_rows() does, and of a wake time it leaves UNSET):
    "journal" for journal entries alone (a step started or ended), "final" for an instance's
    last write (its final status and outcome, its lease let go); None for any other write,
    which the backend sends as statements."""
    if not changes:
        return "journal" if rows else None
    if set(changes) != FINAL_CHANGES or changes["status"] not in FINISHED:
        return None
    if any(changes[name] is not None for name in ("lease_token", "lease_until", "wake_at")):
        return None
    return "final"


class Routines:
    """Whether the database has the store's write routines and the connection's user may call
    them (a database whose privileges keep them from the user the application connects as),
    asked once per process and alias: `probe` is a query whose one value says so."""

    def __init__(self, probe: str, params: list[Any]) -> None:
        self._probe = probe
        self._params = params
        self._found: bool | None = None
        self._lock = threading.Lock()

    def available(self, connection: Any) -> bool:
        if self._found is None:
            with self._lock, connection.cursor() as cursor:
                cursor.execute(self._probe, self._params)
                self._found = bool(cursor.fetchone()[0])
        return self._found

    def forget(self) -> None:
        """Ask again at the next write (after a migration made or dropped the routines)."""
        self._found = None


def unpark_statement(write: InstanceWrite, parked: str) -> tuple[str, list[Any]] | None:
    """The statement that puts back the instances parked for the key of an instance this write
    releases (store/parking.py), for the write's transaction after the row lock's read; None
    when it does not release a keyed instance. `parked`: the condition "is parked" as this
    database's partial index (or column) reads it."""
    if write.release is None or write.unpark is None:
        return None
    table = WorkflowInstance._meta.db_table
    return (
        f"UPDATE {table} SET parked = %s WHERE workflow = %s AND concurrency_key = %s AND {parked}",
        [False, *write.unpark],
    )


def write_rows(
    cursor: Any,
    connection: Any,
    id: str,
    entries: dict[str, Any],
    changes: dict[str, Any],
    conflict_fields: list[str],
) -> None:
    """The statements of a fast write, under the lease the caller checked: the journal
    `entries` upserted in one INSERT (on `conflict_fields`, the unique key, where the database
    names it), then the instance's `changes` in one UPDATE."""
    if entries:
        journal = JournalEntry._meta
        fields = [journal.get_field(name) for name in ("instance", "name", "document")]
        document = journal.get_field("document")
        suffix = connection.ops.on_conflict_suffix_sql(
            fields, OnConflict.UPDATE, [document.column], conflict_fields
        )
        cursor.execute(
            f"INSERT INTO {journal.db_table} (instance_id, name, document) VALUES "
            + ", ".join(["(%s, %s, %s)"] * len(entries))
            + f" {suffix}",
            [
                value
                for name, entry in entries.items()
                for value in (id, name, document.get_db_prep_save(entry, connection))
            ],
        )
    if changes:
        instances = WorkflowInstance._meta
        columns = [instances.get_field(name) for name in changes]
        cursor.execute(
            f"UPDATE {instances.db_table} SET "
            + ", ".join(f"{field.column} = %s" for field in columns)  # type: ignore[union-attr]
            + " WHERE id = %s",
            [
                field.get_db_prep_save(value, connection)  # type: ignore[union-attr]
                for field, value in zip(columns, changes.values(), strict=True)
            ]
            + [id],
        )
