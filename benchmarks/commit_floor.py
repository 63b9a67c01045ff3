"""The database server's CPU per transaction at its floor, beside the lease holder's writes.

    DB=postgres BENCH_DB_NAME=bench python benchmarks/commit_floor.py [N] [ROUNDS]

A drain's server CPU is mostly its transactions (5.2 per three-step workflow, `start()`
included): this measures what the smallest of them costs the server on this machine, to tell
the part of a write's cost its statement could lose from the part every commit pays. Each round
sends N of each, in autocommit, on this process's connection, and prints the CPU of the
connection's server process (its backend, benchmarks/cpu.py) per call:

- `SELECT 1` (a round trip, no transaction to commit);
- a one-row INSERT of a small JSON document into a table of its own (a commit that writes
  WAL and waits for its flush), with `synchronous_commit` on (PostgreSQL's default, the
  workflows' setting) and off (the flush not waited for: what the flush costs).

The lease holder's writes themselves are measured the same way by write_functions.py.

PostgreSQL only. Creates the table `bench_commit_floor` in the benchmark database (which must
exist) and drops it at the end. Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import itertools
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.settings")

import django  # noqa: E402 - after the path

django.setup()

from django.db import DEFAULT_DB_ALIAS, connections  # noqa: E402

from benchmarks.cpu import backend_seconds  # noqa: E402

TABLE = "bench_commit_floor"
DOCUMENT = b'{"status": "running", "attempt": 1, "started_at": "2026-12-04T18:00:00+00:00"}'


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.vendor != "postgresql":
        raise SystemExit("commit_floor.py measures PostgreSQL (DB=postgres).")
    connection.ensure_connection()
    raw = connection.connection
    raw.autocommit = True
    pgconn = raw.pgconn
    server = backend_seconds(connection)
    keys = itertools.count()

    def run(sql: bytes, params: list[bytes] | None = None, *, fresh_key: bool = False) -> float:
        """The server's CPU per call, in ms, for n calls of `sql`."""
        before = server()
        for _ in range(n):
            values = [str(next(keys)).encode(), *(params or [])] if fresh_key else params or []
            result = pgconn.exec_params(sql, values, result_format=0)
            if result.status not in (1, 2):  # COMMAND_OK, TUPLES_OK
                raise SystemExit(result.error_message.decode())
        return (server() - before) / n * 1000

    pgconn.exec_(f"DROP TABLE IF EXISTS {TABLE}".encode())
    pgconn.exec_(f"CREATE TABLE {TABLE} (id text PRIMARY KEY, document jsonb)".encode())
    insert = f"INSERT INTO {TABLE} (id, document) VALUES ($1, $2::jsonb)".encode()
    figures: dict[str, list[float]] = {}
    try:
        for _ in range(rounds):
            for setting in ("on", "off"):
                pgconn.exec_(f"SET synchronous_commit = {setting}".encode())
                figures.setdefault(f"SELECT 1, synchronous_commit {setting}", []).append(
                    run(b"SELECT 1")
                )
                figures.setdefault(f"one-row INSERT, synchronous_commit {setting}", []).append(
                    run(insert, [DOCUMENT], fresh_key=True)
                )
    finally:
        pgconn.exec_(b"RESET synchronous_commit")
        pgconn.exec_(f"DROP TABLE IF EXISTS {TABLE}".encode())
    print(f"server CPU per call, ms ({n} calls a round, {rounds} rounds; median):")
    for label, values in figures.items():
        shown = " ".join(f"{value:.3f}" for value in values)
        print(f"  {label}: {shown} (median {statistics.median(values):.3f})")


if __name__ == "__main__":
    main()
