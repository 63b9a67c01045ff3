"""The engine's clock: every timestamp it writes comes from here, so tests can move time."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any, Protocol

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from .conf import SETTING, get_settings


class Clock(Protocol):
    """Anything with a `now()` returning an aware datetime."""

    def now(self) -> datetime: ...


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


_lock = threading.Lock()
_override: list[Clock] = []  # use_clock() stack, process-wide on purpose: every thread and worker
_configured: Clock | None = None


def set_override(clock: Clock | None) -> None:
    """Push (or, with None, pop) the process-wide clock that use_clock() installs."""
    with _lock:
        if clock is None:
            _override.pop()
        else:
            _override.append(clock)


def reset() -> None:
    """Forget the CLOCK setting's clock, so the next get_clock() reads the setting again."""
    global _configured
    with _lock:
        _configured = None


@receiver(setting_changed)
def _reload(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTING:
        reset()


def get_clock() -> Clock:
    """The clock in use: use_clock()'s, else the CLOCK setting's, else the system clock."""
    global _configured
    if _override:
        return _override[-1]
    if _configured is None:
        configured: Any = get_settings().clock
        if isinstance(configured, str):
            configured = import_string(configured)
            if isinstance(configured, type):
                configured = configured()
        _configured = configured or SystemClock()
    return _configured


def now() -> datetime:
    """The current time of the clock in use, as an aware UTC datetime."""
    value = get_clock().now()
    if value.tzinfo is None:
        raise ValueError(
            "The workflow clock returned a naive datetime; clocks must return aware ones."
        )
    return value if value.tzinfo is UTC else value.astimezone(UTC)
