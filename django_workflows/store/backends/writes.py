"""A claim and a lease holder's write as the store hands them to a backend (ClaimRequest;
InstanceWrite, with its Release and the Ride of a claim on it), and what the hand-written fast writes of the server backends
share: which writes may take them, the columns a write changes, and which writes the
database's own routines carry (PostgreSQL's functions, MySQL's and MariaDB's procedures)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ...attributes import Stored
from ...models import FINISHED, Status, WorkflowInstance


@dataclass(frozen=True)
class ClaimRequest:
    """A claim as the store hands it to a backend: lease up to `limit` due instances of
    `workflows` (name, version) in `queues` (sorted; None: every queue) to `owner` with
    `token` until `lease_until`, due at `now`."""

    owner: str
    token: str
    now: datetime
    lease_until: datetime
    limit: int
    workflows: list[tuple[str, int]]
    queues: list[str] | None = None


@dataclass(frozen=True)
class Release:
    """Hand the instance back: when it is next due (None: only a signal or a cancel wakes it),
    the waits it registers, and the execution's signal cursor."""

    wake_at: datetime | None
    waits: list[tuple[str, str | None]]
    signal_cursor: int
    had_waits: bool = True  # False: the instance registered none before, nothing to delete
    # True: due at wake_at even with a cancel requested (an instance left alone because the
    # codec cannot read it: a cancel cannot run before it can be read).
    hold: bool = False


@dataclass(frozen=True)
class Ride:
    """A claim that rides on the release of a lease holder's instance: the same statement
    leases one more due instance of `workflows` (in `queues`; None: every queue) to `owner`
    with `token`, for `lease_duration` from the write, as a claim without limits would (in
    claim order, never an instance another claim holds), and only if the release itself
    lands. Where the backend cannot (the general path, MySQL and MariaDB, SQLite), nothing
    rides and the worker claims as before. `first_journals`: as claim()'s."""

    owner: str
    token: str
    lease_duration: timedelta
    workflows: list[tuple[str, int]]
    queues: list[str] | None = None
    first_journals: bool = False


@dataclass
class InstanceWrite:
    """One write by the lease holder; fields left out stay as they are."""

    now: datetime
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Written only while no cancel or terminate is requested: a step's start.
    guarded_entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    changes: dict[str, Any] = field(default_factory=dict)
    lease_until: datetime | None = None
    release: Release | None = None
    signal: dict[str, Any] | None = None
    # True: wake get_value() waiting in other processes at the commit (a published value).
    announce: bool = False
    # True: the journal is deleted before `entries` are written (ctx.continue_as_new()).
    restart: bool = False
    # Search attributes set (or, None, removed) by ctx.set_attributes(); stored plain.
    attributes: dict[str, Stored | None] | None = None
    # The instance's (workflow, concurrency key), if it has a key: a release puts back the
    # instances parked for that key, in the write's own transaction (store/parking.py).
    unpark: tuple[str, str] | None = None


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
            with self._lock:
                if self._found is None:  # not asked meanwhile by another thread
                    with connection.cursor() as cursor:
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
