"""Schedules, in one package. Its public names (`django_workflows.schedules.upsert()` and the
rest) are those of `api.py`, re-exported here.

One job a module: `timing.py` (when a Timing's occurrences fall: `every`, and wall-clock times
across clock changes), `cron.py` (the cron parser), `rrule.py` (the RRULE parser), `ids.py` (the
occurrences' instance ids), `state.py` (a schedule row's spec and state), `declared.py` (the
schedules declared in code, kept saved by the workers), `start.py` (starting one occurrence's
instance), `runner.py` (a worker's share of the due schedules) and `api.py` (the public API).
Their store code is `store/schedules.py`.

The public names load on first use, as the package's own do: the client imports `ids.py` and
`Schedule()` checks its timing with `timing.py`, while a workflows.py may load during Django's
setup, and neither may load the API (which needs the models, and imports the client).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import ScheduleStatus, get, list, pause, preview, remove, resume, trigger, upsert

__all__ = [
    "ScheduleStatus",
    "get",
    "list",
    "pause",
    "preview",
    "remove",
    "resume",
    "trigger",
    "upsert",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(".api", __name__), name)
    globals()[name] = value
    return value
