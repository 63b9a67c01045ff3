"""What one `start()`, `signal()`, `get_status()` or `list_instances()` costs the process that calls it (a web
request's share) and the server.

    python benchmarks/start_cpu.py --db postgres [--starts 2000] [--rounds 3]
        [--call start|signal|status|list] [--atomic]

Drops, re-creates and migrates the benchmark database (benchmarks/settings.py; BENCH_DB_NAME
names it), then, each round, calls `start()` of the one-step `bench` workflow --starts times in
this thread, one transaction each (as a view that starts a workflow in autocommit), each with a
new id, and prints per start: this thread's CPU (`time.thread_time()`), the server's CPU (on
PostgreSQL the connection's backend process, on MariaDB the whole server process, its
background threads included; from /proc, so the server runs on this machine), and the wall
time. No worker runs.
Fifty starts before each round warm the connection and the code up. With `--call signal`, the
same for `signal()` of a signal nobody waits for, each with a payload and a key of its own (the
signal's INSERT and the UPDATE that finds no waiter). With `--call status`, the same for
`get_status()` of one pending instance started before the first round (a status page's read;
it has no waits, values, tags, attributes or streams). With `--call list`, the same for
`list_instances()` of a queue of 20 such pending instances (a page listing a customer's orders).
With `--atomic`, each call inside a
`transaction.atomic()` of its own, as a view under ATOMIC_REQUESTS makes it.

BENCH_CODE=<checkout>: measure that checkout's django_workflows (e.g. another branch's) with
this script. Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(os.environ.get("BENCH_CODE") or Path(__file__).resolve().parent.parent).resolve()
HERE = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "mysql"], default="postgres")
    parser.add_argument("--starts", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--call", choices=["start", "signal", "status", "list"], default="start")
    parser.add_argument("--atomic", action="store_true", help="each call in a transaction")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT))  # the measured code first
    from benchmarks.harness import fresh_database

    fresh_database(args.db)
    from django.db import connection, transaction

    import django_workflows as wf
    from benchmarks.cpu import backend_seconds, server_seconds

    server: Callable[[], float] | None = None
    if connection.vendor == "postgresql":
        server = backend_seconds(connection)
    elif connection.vendor == "mysql":
        server = functools.partial(server_seconds, "mysql")

    def send(id: str) -> None:
        if args.call == "start":
            wf.start("bench", {"steps": 1}, id=id)
        elif args.call == "signal":
            wf.signal("bench-nobody-waits", {"sent": id}, key=id)
        elif args.call == "status":
            wf.get_status("bench-status")
        else:
            wf.list_instances(queue="bench-list")

    def call(id: str) -> None:
        if args.atomic:
            with transaction.atomic():
                send(id)
        else:
            send(id)

    if args.call == "status":
        wf.start("bench", {"steps": 1}, id="bench-status")
    if args.call == "list":
        for index in range(20):
            wf.start("bench", {"steps": 1}, id=f"bench-list-{index:02d}", queue="bench-list")
    for round in range(1, args.rounds + 1):
        for index in range(50):
            call(f"warm-{round}-{index}")
        server_before = server() if server else 0.0
        wall, cpu = time.perf_counter(), time.thread_time()
        for index in range(args.starts):
            call(f"{args.call}-{round}-{index:06d}")
        wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
        per = 1000 / args.starts
        print(
            f"round {round}: per {args.call}: this thread's CPU {cpu * per:.3f} ms"
            + (f", the server's {(server() - server_before) * per:.3f} ms" if server else "")
            + f", wall {wall * per:.3f} ms"
        )


if __name__ == "__main__":
    main()
