"""Schedules, in one package: its public names (`django_workflows.schedules.upsert()` and the
rest, from `api.py`) re-exported here.

The public names are loaded on first use, as the package's own are: the client imports
the occurrence ids, and `Schedule()` validates its timing, while a workflows.py loads during Django's
setup; neither may load the API (which needs the models, and the client).
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
