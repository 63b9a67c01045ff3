"""Running a store function's own transaction again when the database broke a deadlock."""

from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.db import DatabaseError, connections

from .backends import backend

logger = logging.getLogger("django_workflows")

F = TypeVar("F", bound=Callable[..., Any])


def retries_deadlocks(fn: F) -> F:
    """Run a store function's own transaction again when the database broke a deadlock by
    rolling it back (up to five times). Inside the caller's transaction the error reaches the
    caller, whose writes were rolled back too: only they can run the transaction again."""

    @functools.wraps(fn)
    def wrapper(using: str, *args: Any, **kwargs: Any) -> Any:
        connection = connections[using]
        for attempt in range(1, 6):
            try:
                return fn(using, *args, **kwargs)
            except DatabaseError as error:
                if (
                    connection.in_atomic_block
                    or attempt == 5
                    or not backend(using).is_deadlock(error)
                ):
                    raise
                logger.debug("Deadlock in %s, attempt %d; running it again.", fn.__name__, attempt)
                time.sleep(random.uniform(0.001, 0.01) * attempt)
        raise AssertionError("unreachable")

    return wrapper  # type: ignore[return-value]
