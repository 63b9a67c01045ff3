"""manage.py runworkflows: options in, Worker(...).run() out."""

from __future__ import annotations

import argparse
import atexit
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import autoreload

from ...conf import database_alias
from ...durations import parse_duration
from ...errors import WorkflowNotFoundError
from ...store.tables import pending_migrations
from ...worker.worker import Worker


class Command(BaseCommand):
    help = "Run due workflow instances until stopped (SIGTERM or Ctrl-C hands them back)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--concurrency", type=int, help="Executions run at once (threads).")
        parser.add_argument("--poll-interval", type=parse_duration, help='e.g. "1s", "500ms".')
        parser.add_argument("--lease-duration", type=parse_duration, help='e.g. "30s".')
        parser.add_argument("--shutdown-timeout", type=parse_duration, help='e.g. "10s".')
        parser.add_argument(
            "--workflow",
            action="append",
            dest="workflows",
            metavar="NAME",
            help="Run only this workflow (repeatable).",
        )
        parser.add_argument(
            "--queue",
            action="append",
            dest="queues",
            metavar="NAME",
            help="Claim only this queue's instances (repeatable; default: every queue).",
        )
        parser.add_argument("--once", action="store_true", help="Run what is due, then exit.")
        parser.add_argument("--database", default=None, help="The database alias of the workflows.")
        parser.add_argument(
            "--reload",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="Restart when code changes, as runserver does (default: on under DEBUG).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        logger = logging.getLogger("django_workflows")
        if not any(
            not isinstance(h, logging.NullHandler) for h in _handlers(logger)
        ):  # a project without LOGGING for us still sees what the worker does
            handler = logging.StreamHandler(self.stderr)
            handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
        try:
            using = database_alias(options["database"])  # also validates DJANGO_WORKFLOWS
        except (ValueError, TypeError) as error:
            raise CommandError(str(error)) from None
        _check_migrated(using)
        # Every option is checked here: under the reloader, in its first process too, which
        # then only restarts the child that serves.
        worker = self._worker(options)
        if options["once"]:
            # The run loop's thread pool and batched claims, until idle (drain() runs one
            # instance at a time, for tests).
            executed = self._run(worker, worker.run_until_idle)
            self.stdout.write(f"Ran {executed} execution(s).")
            return
        reload = settings.DEBUG if options["reload"] is None else options["reload"]
        if reload:
            autoreload.run_with_reloader(self._run_reloading, worker)
        else:
            self._run(worker)

    def _worker(self, options: dict[str, Any]) -> Worker:
        try:
            return Worker(
                concurrency=options["concurrency"],
                poll_interval=options["poll_interval"],
                lease_duration=options["lease_duration"],
                shutdown_timeout=options["shutdown_timeout"],
                workflows=options["workflows"],
                using=options["database"],
                queues=options.get("queues"),
            )
        except (ValueError, WorkflowNotFoundError) as error:  # a bad option or setting
            raise CommandError(str(error)) from None

    def _run_reloading(self, worker: Worker) -> None:
        """Under the autoreloader: a changed file stops the worker (handing its instances back)
        before the process restarts with the new code."""
        stopped = threading.Event()

        def on_change(sender: Any, file_path: Any, **kwargs: Any) -> None:
            self.stderr.write(f"{file_path} changed: stopping the worker to reload.")
            worker.stop()
            stopped.wait(worker.shutdown_timeout.total_seconds() + 1)
            if worker.left_behind:
                _exit_past(worker, 3)  # the autoreloader's code for "restart me"

        autoreload.file_changed.connect(on_change, weak=False)

        def on_exit() -> None:
            # Ctrl-C or SIGTERM end the reloader's main thread; before the interpreter stops
            # this daemon thread, let the worker hand its instances back.
            worker.stop()
            stopped.wait(worker.shutdown_timeout.total_seconds() + 1)

        atexit.register(on_exit)
        try:
            worker.run()
        finally:
            stopped.set()

    def _run(self, worker: Worker, serve: Callable[[], Any] | None = None) -> Any:
        """`serve` (worker.run by default) with SIGTERM and SIGINT stopping the worker."""
        stops = 0

        def stop(signum: int, frame: Any) -> None:
            nonlocal stops
            stops += 1
            if stops > 1:
                os._exit(1)  # a second signal: exit at once
            worker.stop()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        result = (serve or worker.run)()
        if worker.left_behind:
            _exit_past(worker, 0)
        return result


def _check_migrated(using: str) -> None:
    """Refuse to start on tables that are behind this code's migrations: every claim and write
    would fail, over and over, instead of once with what to do."""
    pending = pending_migrations(using)
    if pending:
        raise CommandError(
            f"The django_workflows tables on database {using!r} are behind this code: "
            f"{len(pending)} migration(s) not applied ({', '.join(pending)}). Run "
            f"`manage.py migrate django_workflows --database {using}` first."
        )


def _exit_past(worker: Worker, code: int) -> None:
    """Exit now: the interpreter would wait for the threads of steps the worker stopped waiting
    for (Python cannot stop a thread). Their instances keep their leases, which expire as after
    a crash."""
    logging.getLogger("django_workflows").info(
        "Exiting without waiting for the steps of %s.", ", ".join(worker.left_behind)
    )
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _handlers(logger: logging.Logger) -> list[logging.Handler]:
    """The handlers a record of `logger` reaches, following propagation."""
    found: list[logging.Handler] = []
    current: logging.Logger | None = logger
    while current is not None:
        found += current.handlers
        current = current.parent if current.propagate else None
    return found
