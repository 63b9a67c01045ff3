"""tracemalloc in a worker process (benchmarks/settings.py with BENCH_TRACEMALLOC): a snapshot
written to a folder at each SIGUSR1, for benchmarks/memory.py to compare."""

from __future__ import annotations

import itertools
import signal
import tracemalloc
from pathlib import Path
from typing import Any


def install(folder: str) -> None:
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    counter = itertools.count()
    tracemalloc.start(12)

    def dump(signum: int, frame: Any) -> None:
        snapshot = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__)]
        )
        snapshot.dump(str(path / f"snapshot-{next(counter):03d}.trace"))

    signal.signal(signal.SIGUSR1, dump)
