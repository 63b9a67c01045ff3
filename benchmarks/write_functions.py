"""The database server's CPU for the lease holder's writes, as statements and through the write
routines of migration 0002_routines: PostgreSQL's functions, MySQL's and MariaDB's stored
procedures (dw_journal_write_v1, dw_final_write_v1).

    DB=postgres BENCH_DB_NAME=bench [DB_PREPARED=1] python benchmarks/write_functions.py [N] [ROUNDS]
    DB=mysql BENCH_DB_NAME=bench python benchmarks/write_functions.py [N] [ROUNDS]

Drops, re-creates and migrates the benchmark database. Each round, for each way (the statement,
then the routine), starts N instances of `bench`, claims them, and writes what a three-step
workflow writes: three writes of journal entries alone (a step's start; a step's end with the
next one's start) and the last write (the last step's end, the outcome, the lease let go),
through store.write(), as the worker does. Prints the CPU of this connection's server backend
(/proc/<pg_backend_pid()>/stat) per journal write and per last write, on MySQL and MariaDB that of
the whole server process (its threads cannot be told apart without the performance schema: let
nothing else use it meanwhile), and this process's CPU per workflow. The statements are sent as the benchmark settings' connection sends them: Django's
default client-side binding, or prepared statements with DB_PREPARED=1.

The server must run on this machine. Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.cpu import backend_seconds, server_seconds  # noqa: E402 - after the path
from benchmarks.harness import fresh_database  # noqa: E402

LEASE = timedelta(minutes=10)


def main() -> None:
    db = os.environ.get("DB", "postgres")
    fresh_database(db)
    from django.db import connection

    import django_workflows as wf
    from django_workflows import clock
    from django_workflows.engine.registry import registry
    from django_workflows.models import Status
    from django_workflows.store import claims
    from django_workflows.store import instances as store
    from django_workflows.store.backends import backend

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    pairs = registry.pairs(None)
    store_backend: Any = backend("default")
    if db == "postgres":
        routines = store_backend._functions
        server_cpu = backend_seconds(connection)
    else:
        routines = store_backend._procedures

        def server_cpu() -> float:
            return server_seconds(db)

    def step(n: int) -> dict[str, object]:
        return {"kind": "step", "status": "completed", "attempt": 1, "result": {"i": n}}

    def started(n: int) -> dict[str, object]:
        return {"kind": "step", "status": "running", "attempt": 1, "pos": [n]}

    def journal_write(n: int) -> store.InstanceWrite:
        done = {f"step-{n - 1}": step(n - 1)} if n else {}
        return store.InstanceWrite(
            now=clock.now(), entries=done, guarded_entries={f"step-{n}": started(n)}
        )

    def last_write() -> store.InstanceWrite:
        return store.InstanceWrite(
            now=clock.now(),
            entries={"step-2": step(2)},
            changes={"status": Status.COMPLETED, "output": {"steps": 3}, "error": None},
            release=store.Release(None, [], 0, had_waits=False),
        )

    figures: dict[str, list[tuple[float, float, float]]] = {"statement": [], "routine": []}
    for round in range(rounds):
        for way in ("statement", "routine"):
            routines.forget()
            if way == "statement":
                routines._found = False
            token = f"{way}-{round}"
            for i in range(count):
                wf.start("bench", {"steps": 3}, id=f"{token}-{i}")
            now = clock.now()
            claimed = claims.claim(
                "default",
                owner="o",
                token=token,
                now=now,
                lease_until=now + LEASE,
                limit=count,
                workflows=pairs,
            ).instances
            assert len(claimed) == count, len(claimed)
            ids = [instance.id for instance in claimed]
            before, python = server_cpu(), time.process_time()
            for n in range(3):
                for id in ids:
                    assert store.write("default", id, token, journal_write(n)) is not None
            middle = server_cpu()
            for id in ids:
                assert store.write("default", id, token, last_write()) is not None
            after, python = server_cpu(), time.process_time() - python
            figures[way].append(
                (
                    (middle - before) / (3 * count) * 1000,
                    (after - middle) / count * 1000,
                    python / count * 1000,
                )
            )
    binding = "prepared statements" if os.environ.get("DB_PREPARED") else "client-side binding"
    sent = binding if db == "postgres" else "the server's whole CPU"
    print(f"{count} workflows a round, {rounds} rounds, {sent}; ms, each round's figure:")
    for way, rows in figures.items():
        for label, column in (("journal write", 0), ("last write", 1)):
            values = [row[column] for row in rows]
            print(
                f"  {way:9} server CPU per {label:13}: "
                f"{' '.join(f'{v:.3f}' for v in values)} (median {statistics.median(values):.3f})"
            )
        values = [row[2] for row in rows]
        print(
            f"  {way:9} this process's CPU per workflow (4 writes): "
            f"{' '.join(f'{v:.3f}' for v in values)}"
        )


if __name__ == "__main__":
    main()
