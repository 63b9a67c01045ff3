"""For the atomic steps' crash test, in the worker process it spawns: with DW_PAUSE_BEFORE_COMMIT
set to a path, an atomic step's journal write is followed, inside its still open transaction,
by that file written and a long sleep, so that the test can SIGKILL the process there."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from django_workflows.engine import atomic


def install() -> None:
    path = os.environ.get("DW_PAUSE_BEFORE_COMMIT")
    if not path:
        return
    write_entry = atomic.commit_entry

    def written_then_paused(x: Any) -> None:
        write_entry(x)
        Path(path).write_text(f"{os.getpid()}\n")
        time.sleep(120)

    atomic.commit_entry = written_then_paused  # type: ignore[assignment]
