"""Counting the statements a process sends (benchmarks/settings.py with BENCH_STATEMENTS): an
execute wrapper on every connection notes each statement's time and its first words, and the
notes are written to a file at exit, one `<time> <words>` line each."""

from __future__ import annotations

import atexit
import threading
import time
from collections.abc import Callable
from typing import Any

_notes: list[tuple[float, str]] = []
_lock = threading.Lock()


def _note(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
    with _lock:
        _notes.append((time.time(), " ".join(str(sql).split()[:4])))
    return execute(sql, params, many, context)


def _wrap(sender: Any, connection: Any, **kwargs: Any) -> None:
    connection.execute_wrappers.append(_note)


def install(path: str) -> None:
    from django.db.backends.signals import connection_created

    connection_created.connect(_wrap, weak=False)

    def write() -> None:
        with _lock, open(path, "w") as out:
            out.writelines(f"{at!r} {words}\n" for at, words in _notes)

    atexit.register(write)
