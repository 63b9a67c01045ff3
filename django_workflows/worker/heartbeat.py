"""A worker process's row in the registry of workers: written when it starts serving, refreshed
every heartbeat by its lease renewer, deleted at a clean exit. A database fault never stops the
worker: a failed write is logged, and the next heartbeat writes the row again."""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import threading
from collections.abc import Callable
from importlib import metadata

from .. import clock
from ..store import workers as store

logger = logging.getLogger("django_workflows")

PACKAGE = "django-durable-workflows"


def package_version() -> str:
    """The installed version of the django-durable-workflows package ("unknown" when it runs
    from a source tree that was never installed)."""
    try:
        return metadata.version(PACKAGE)[:32]
    except metadata.PackageNotFoundError:
        return "unknown"


class Heartbeat:
    """One worker's registry row, on `using`. `counts()` gives (running, executed) at each
    write; `register()`, `beat()` and `unregister()` never raise."""

    def __init__(
        self,
        *,
        using: str,
        id: str,
        queues: list[str],
        workflows: list[str],
        concurrency: int,
        heartbeat: float,
        counts: Callable[[], tuple[int, int]],
    ) -> None:
        self.using = using
        self.registration = store.Registration(
            id=id,
            host=socket.gethostname()[:255],
            pid=os.getpid(),
            queues=queues,
            workflows=workflows,
            concurrency=concurrency,
            version=package_version(),
            heartbeat=heartbeat,
            started_at=clock.now(),  # again when it starts serving: register()
        )
        self._counts = counts
        # Held by each write: once unregister() deleted the row, no late beat writes it back.
        self._lock = threading.Lock()
        self._closed = False

    def register(self) -> None:
        """Write the row as the worker starts serving (started now)."""
        with self._lock:
            if not self._closed:
                self.registration = dataclasses.replace(self.registration, started_at=clock.now())
                self._write(store.register, "could not register in the worker registry")

    def beat(self) -> None:
        """Refresh the row (last seen now, running, executed); write it again if it is gone."""
        with self._lock:
            if self._closed:
                return
            found = self._write(store.beat, "could not refresh its row in the worker registry")
            if found is False:
                logger.info(
                    "Worker %s registered again: its row in the worker registry was gone.",
                    self.registration.id,
                )

    def _write(self, write: Callable[..., bool | None], failure: str) -> bool | None:
        """`write` the row with the counts now (the caller holds the lock); None, logged, when
        the database refused it: the next heartbeat tries again."""
        try:
            running, executed = self._counts()
            return write(
                self.using,
                self.registration,
                now=clock.now(),
                running=running,
                executed=executed,
            )
        except Exception:
            logger.exception(
                "Worker %s %s; the next heartbeat tries again.", self.registration.id, failure
            )
            return None

    def unregister(self) -> None:
        """Delete the row (a clean exit); no beat writes it afterwards."""
        with self._lock:
            self._closed = True
            try:
                store.unregister(self.using, self.registration.id)
            except Exception:
                logger.exception(
                    "Worker %s could not delete its row from the worker registry: it shows as "
                    "gone after three heartbeats, and purge() deletes it a day later.",
                    self.registration.id,
                )
