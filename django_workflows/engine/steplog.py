"""step.log: a LoggerAdapter of the `django_workflows` logger that also keeps the lines of one
attempt, bounded, for its journal entry (`logs`, encoded by a codec like its result, and
`logs_dropped`, how many lines did not fit).

The entry keeps the lines of the attempts before too, each attempt's as bounded as the latest's
(carried()): `earlier_logs`, a list of {attempt, logs, logs_dropped}, oldest first, of the
attempts that logged a line, at most MAX_ATTEMPTS - 1 of them (a retry policy without a limit
would grow the entry without one), and `earlier_logs_omitted`, how many attempts' lines were
let go to keep to that, the oldest first."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from ..jsonvalues import storable_text

MAX_LINES = 50  # per attempt
MAX_BYTES = 16 * 1024  # per attempt: the UTF-8 of the lines' messages, levels and times
MAX_ATTEMPTS = 10  # attempts whose lines an entry keeps: the latest's and the 9 before it

logger = logging.getLogger("django_workflows")


class StepLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    """What `step.log` is: every line goes to the `django_workflows` logger with the
    instance, workflow, step and attempt in `extra`, and is kept for the attempt's journal
    entry whatever the logger's level (the first MAX_LINES lines that fit in MAX_BYTES; the
    others are counted)."""

    def __init__(self, extra: Mapping[str, Any], now: Callable[[], datetime]):
        super().__init__(logger, dict(extra))
        self._now = now
        self._lock = threading.Lock()
        self._lines: list[dict[str, Any]] = []
        self._bytes = 0
        self._dropped = 0

    def process(self, msg: Any, kwargs: Any) -> tuple[Any, Any]:
        kwargs["extra"] = {**(kwargs.get("extra") or {}), **(self.extra or {})}
        return msg, kwargs

    def log(self, level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
        self._keep(level, msg, args)
        kwargs.setdefault("stacklevel", 1)
        kwargs["stacklevel"] += 1  # the record names the step's line, not this one
        super().log(level, msg, *args, **kwargs)

    def _keep(self, level: int, msg: Any, args: tuple[Any, ...]) -> None:
        try:
            message = str(msg) % args if args else str(msg)
        except (TypeError, ValueError, KeyError):  # logging reports it on the handler's side
            message = f"{msg!s} {args!r}"
        line = {
            "at": self._now().isoformat(),
            "level": logging.getLevelName(level),
            "message": storable_text(message),
        }
        size = sum(len(str(value).encode()) for value in line.values())
        with self._lock:
            if len(self._lines) >= MAX_LINES or self._bytes + size > MAX_BYTES:
                self._dropped += 1
                return
            self._lines.append(line)
            self._bytes += size

    def journaled(self) -> dict[str, Any]:
        """What the attempt's entry keeps of its lines: `logs` and `logs_dropped`, or nothing
        when it logged none."""
        with self._lock:
            if not self._lines and not self._dropped:
                return {}
            return {"logs": list(self._lines), "logs_dropped": self._dropped}


def carried(entry: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the entry of a new attempt keeps of the lines of the attempts before it, from the
    entry `entry` of the attempt before (None for a first attempt): its `earlier_logs` and its
    own lines, which its `logs` hold, and `earlier_logs_omitted`; nothing when none logged."""
    if entry is None:
        return {}
    earlier = entry.get("earlier_logs")
    kept: list[Any] = list(earlier) if isinstance(earlier, list) else []
    omitted = entry.get("earlier_logs_omitted") or 0
    logs = entry.get("logs")
    if logs or entry.get("logs_dropped"):
        kept.append(
            {
                "attempt": entry.get("attempt"),
                "logs": logs if isinstance(logs, list) else [],
                "logs_dropped": entry.get("logs_dropped") or 0,
            }
        )
    if len(kept) > MAX_ATTEMPTS - 1:
        omitted += len(kept) - (MAX_ATTEMPTS - 1)
        kept = kept[-(MAX_ATTEMPTS - 1) :]
    if not kept and not omitted:
        return {}
    return {"earlier_logs": kept, "earlier_logs_omitted": omitted}
