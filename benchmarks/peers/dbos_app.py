"""DBOS Transact: a workflow of three trivial `@DBOS.step()`s, and a worker process.

    python -m benchmarks.peers.dbos_app prepare   launch once (migrations), register the queue
    python -m benchmarks.peers.dbos_app worker    launch and dequeue until SIGTERM

The system database is DPEER_DBOS_URL. The queue `bench` is registered after `DBOS.launch()`, as
DBOS documents, with `worker_concurrency=10`, or with none (DBOS's default: no limit per
process, an unbounded thread pool) when DPEER_DBOS_WORKER_CONCURRENCY is `default`; everything
else is DBOS's default (the queue's polling interval of 1 s, LISTEN/NOTIFY on).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any

from dbos import DBOS, DBOSConfig

QUEUE = "bench"
WORKFLOW = "bench_three"
CONCURRENCY = os.environ.get("DPEER_DBOS_WORKER_CONCURRENCY", "10")


@DBOS.step()
def step_0() -> dict[str, Any]:
    return {"i": 0, "ok": True}


@DBOS.step()
def step_1() -> dict[str, Any]:
    return {"i": 1, "ok": True}


@DBOS.step()
def step_2() -> dict[str, Any]:
    return {"i": 2, "ok": True}


@DBOS.workflow(name=WORKFLOW)
def bench_three() -> dict[str, Any]:
    step_0()
    step_1()
    last = step_2()
    return {"steps": 3, "last": last}


def launch() -> None:
    config: DBOSConfig = {
        "name": "dpeer-bench",
        "system_database_url": os.environ["DPEER_DBOS_URL"],
    }
    DBOS(config=config)
    DBOS.launch()
    limit = None if CONCURRENCY == "default" else int(CONCURRENCY)
    DBOS.register_queue(QUEUE, worker_concurrency=limit)


def main() -> None:
    mode = sys.argv[1]
    launch()
    if mode == "prepare":
        DBOS.destroy()
        return
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print("dbos worker launched", flush=True)
    stop.wait()
    DBOS.destroy()


if __name__ == "__main__":
    main()
