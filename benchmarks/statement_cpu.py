"""This process's CPU per statement sent the store's ways (store/backends/driver.py: a driver
cursor kept for the thread's connection; on PostgreSQL also postgresql_libpq.py, the write
functions' call through libpq itself; on MySQL and MariaDB, mysql_batches' batch straight on
mysqlclient's connection) and through a new Django cursor each, as before.

    DB=postgres BENCH_DB_NAME=bench [DB_PREPARED=1] python benchmarks/statement_cpu.py [N] [ROUNDS]
    DB=mysql BENCH_DB_NAME=bench python benchmarks/statement_cpu.py [N] [ROUNDS]

On PostgreSQL one statement of a write's shape (two text parameters, a JSON document, a text
and an integer; one row back; through libpq, the integer sent as text as the rest); on MySQL
and MariaDB a batch of a write's shape (START TRANSACTION, a statement with those parameters
and its row, a statement without a result, COMMIT). Each round sends it N times each way, the
ways taking turns a hundred calls at a time, and prints the thread's CPU
(`time.thread_time()`) per call. Needs no table: the benchmark database is only connected to.
Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.settings")

import django  # noqa: E402 - after the path

django.setup()

from django.db import DEFAULT_DB_ALIAS, connections  # noqa: E402

from django_workflows.store.backends import driver  # noqa: E402
from django_workflows.store.backends.mysql import batches as mysql_batches  # noqa: E402

if connections[DEFAULT_DB_ALIAS].vendor == "postgresql":
    from django_workflows.store.backends.postgresql import libpq

DOCUMENT = json.dumps([{"name": "step-1", "doc": {"status": "running", "attempt": 1}}])
# The connection itself, as the store holds it (Backend.connection), not django.db.connection,
# whose every attribute is a lookup of this thread's connection.
connection = connections[DEFAULT_DB_ALIAS]
PARAMS = ["instance-0001", "token-0001", DOCUMENT, "running", 3]
CHUNK = 100


def ways() -> dict[str, Callable[[], Any]]:
    if connection.vendor == "mysql":
        batch: list[mysql_batches.Statement] = [
            ("START TRANSACTION", []),
            ("SELECT %s, %s, %s, %s, %s", PARAMS),
            ("DO %s", [0]),
            ("COMMIT", []),
        ]

        def django_cursor() -> Any:
            with connection.cursor() as cursor:
                return mysql_batches._cursor_results(cursor, batch)

        return {
            "a new Django cursor": django_cursor,
            "the driver's connection": lambda: mysql_batches.results(connection, batch),
        }
    sql = "SELECT %s::text, %s::text, %s::jsonb, %s::text, %s::int"

    def new_cursor() -> Any:
        with connection.cursor() as cursor:
            cursor.execute(sql, PARAMS)
            return cursor.fetchall()

    text = [str(param) for param in PARAMS]
    columns = (str, str, str, str, int)  # Django loads jsonb as text too

    def through_libpq() -> Any:
        return [libpq.call_row(connection, sql, text, columns)]

    return {
        "a new Django cursor": new_cursor,
        "the kept driver cursor": lambda: driver.fetch(connection, sql, PARAMS),
        "libpq (write functions)": through_libpq,
    }


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    connection.ensure_connection()
    chosen = ways()
    results = [[tuple(row) for row in way()] for way in chosen.values()]
    assert all(result == results[0] for result in results), results
    print(f"{connection.vendor}, {n} calls a round, {rounds} rounds; CPU per call, us:")
    figures: dict[str, list[float]] = {name: [] for name in chosen}
    for _ in range(rounds):
        spent = dict.fromkeys(chosen, 0.0)
        for _ in range(n // CHUNK):  # the ways in turn, a chunk each: drift hits both alike
            for name, way in chosen.items():
                began = time.thread_time()
                for _ in range(CHUNK):
                    way()
                spent[name] += time.thread_time() - began
        for name in chosen:
            figures[name].append(spent[name] / (n // CHUNK * CHUNK) * 1e6)
    for name, values in figures.items():
        each = " ".join(f"{value:.0f}" for value in values)
        print(f"  {name:24}: {each} (median {statistics.median(values):.0f})")


if __name__ == "__main__":
    main()
