"""Retry policies: the RETRY setting merged with a step's, and the wait before each retry."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver

from ..conf import SETTING, get_settings
from ..definitions import Retry
from ..durations import parse_duration
from ..errors import NonRetryableStepError


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 3
    delay: timedelta = timedelta(seconds=1)
    factor: float = 2
    max_delay: timedelta = timedelta(minutes=5)
    jitter: str = "none"
    backoff: Callable[[int, BaseException], Any] | None = None
    retry_if: Callable[[BaseException, int], bool] | None = None

    def merged(self, retry: Any, what: str = "retry") -> RetryPolicy:
        """This policy with `retry` (a Retry, an int of attempts, False, or None) over it."""
        if retry is None or retry is True:
            return self
        if retry is False:
            return _replace(self, {"attempts": 1})
        if isinstance(retry, int):
            return _replace(self, Retry(attempts=retry).given())
        if isinstance(retry, dict):
            retry = Retry(**retry)
        if not isinstance(retry, Retry):
            raise ValueError(
                f"{what} must be a Retry, a number of attempts or False, not {retry!r}."
            )
        return _replace(self, retry.given())

    def wait_before(self, attempt: int, error: BaseException) -> timedelta:
        """The wait before attempt `attempt + 1`, after attempt `attempt` failed with `error`."""
        if self.backoff is not None:
            return parse_duration(self.backoff(attempt, error), "backoff()'s result")
        cap = self.max_delay.total_seconds()
        try:
            seconds = self.delay.total_seconds() * self.factor ** (attempt - 1)
        except OverflowError:  # grown past any float, long after it passed the cap
            seconds = cap
        if not seconds <= cap:  # also an infinite factor's inf, and nan from 0 * inf
            seconds = cap
        wait = timedelta(seconds=seconds)
        if self.jitter == "full":
            wait = wait * random.random()
        elif self.jitter == "equal":
            wait = wait / 2 + (wait / 2) * random.random()
        return wait

    def gives_up(self, attempt: int, error: BaseException) -> bool:
        """Whether the failure of attempt `attempt` with `error` ends the step."""
        if isinstance(error, NonRetryableStepError) or attempt >= self.attempts:
            return True
        return self.retry_if is not None and not self.retry_if(error, attempt)


def _replace(policy: RetryPolicy, fields: dict[str, Any]) -> RetryPolicy:
    values = dict(policy.__dict__)
    for name, value in fields.items():
        if name in ("delay", "max_delay"):
            value = parse_duration(value, f"Retry {name}")
        values[name] = value
    return RetryPolicy(**values)


@functools.cache
def default_retry() -> RetryPolicy:
    """The RETRY setting over the built-in default (3 attempts, 1s doubling up to 5m)."""
    return RetryPolicy().merged(get_settings().retry, "DJANGO_WORKFLOWS['RETRY']")


@receiver(setting_changed)
def _reload(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTING:
        default_retry.cache_clear()
