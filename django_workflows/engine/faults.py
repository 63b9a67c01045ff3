"""Database faults in the engine's own store calls: a cancelled statement, a dropped
connection, a lock or statement timeout. They are not the workflow's errors: the call runs
again, on a fresh connection where the old one broke, while the execution holds its lease;
then the execution stops without writing (StoreFailed) and runs again from its journal."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from django.db import Error, connections

from .interrupts import LeaseLost, StoreFailed

if TYPE_CHECKING:
    from .guards import Guards
    from .stops import Stops

logger = logging.getLogger("django_workflows")
T = TypeVar("T")

FIRST_BACKOFF = 0.05  # seconds; doubled after each failure, up to MAX_BACKOFF
MAX_BACKOFF = 2.0


class Held(Protocol):
    """An execution's lease (runtime.Lease), as far as a store call under it needs."""

    guards: Guards
    stops: Stops
    lease_deadline: float


def call_store(lease: Held, fn: Callable[[], T], what: str) -> T:
    """`fn()`, a store call of the execution holding `lease` on its own thread's connection,
    run again after a database error until it succeeds, the lease is lost (LeaseLost) or the
    lease would run out first (StoreFailed). `what` names the call in the log."""
    guards, stops = lease.guards, lease.stops
    failures = 0
    backoff = FIRST_BACKOFF
    while True:
        try:
            result = fn()
        except Error as error:
            failures += 1
            connection = connections[guards.using]
            if failures == 1:
                logger.error(
                    "Instance %s: the database refused %s (%s: %s); trying again while the "
                    "instance's lease lasts.",
                    guards.instance.id,
                    what,
                    type(error).__name__,
                    str(error).strip() or "no message",
                )
            if connection.in_atomic_block:  # the caller's transaction is broken: theirs to redo
                raise guards.interrupted(StoreFailed(f"{what}: {error}")) from error
            _discard_if_broken(connection)
            wait = backoff * random.uniform(0.5, 1.0)
            if stops.stop_reason == "lease-lost":
                raise guards.interrupted(LeaseLost()) from error
            if time.monotonic() + wait >= lease.lease_deadline:
                stops.stop_reason = stops.stop_reason or "store-failed"
                logger.error(
                    "Instance %s: the database refused %s %d times until the instance's lease "
                    "was about to end; its execution stops without writing and runs again "
                    "from its journal.",
                    guards.instance.id,
                    what,
                    failures,
                    exc_info=error,
                )
                raise guards.interrupted(StoreFailed(f"{what}: {error}")) from error
            time.sleep(wait)
            backoff = min(backoff * 2, MAX_BACKOFF)
            continue
        if failures:
            logger.warning(
                "Instance %s: %s succeeded after %d failed tries.",
                guards.instance.id,
                what,
                failures,
            )
        return result


def _discard_if_broken(connection: Any) -> None:
    """Close the connection if it broke (killed, or lost): the next call opens a new one."""
    if connection.connection is not None and not connection.is_usable():
        connection.close()
