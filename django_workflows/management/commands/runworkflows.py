"""manage.py runworkflows: options in, Worker(...).run() out."""

from __future__ import annotations

import logging
import os
import signal
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ...durations import parse_duration
from ...worker import Worker


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
        parser.add_argument("--once", action="store_true", help="Run what is due, then exit.")
        parser.add_argument("--database", default=None, help="The database alias of the workflows.")

    def handle(self, *args: Any, **options: Any) -> None:
        logger = logging.getLogger("django_workflows")
        if not any(
            not isinstance(h, logging.NullHandler) for h in _handlers(logger)
        ):  # a project without LOGGING for us still sees what the worker does
            handler = logging.StreamHandler(self.stderr)
            handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
        worker = Worker(
            concurrency=options["concurrency"],
            poll_interval=options["poll_interval"],
            lease_duration=options["lease_duration"],
            shutdown_timeout=options["shutdown_timeout"],
            workflows=options["workflows"],
            using=options["database"],
        )
        if options["once"]:
            executed = worker.drain()
            self.stdout.write(f"Ran {executed} execution(s).")
            return
        stops = 0

        def stop(signum: int, frame: Any) -> None:
            nonlocal stops
            stops += 1
            if stops > 1:
                os._exit(1)  # a second signal: exit at once
            worker.stop()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        worker.run()


def _handlers(logger: logging.Logger) -> list[logging.Handler]:
    """The handlers a record of `logger` reaches, following propagation."""
    found: list[logging.Handler] = []
    current: logging.Logger | None = logger
    while current is not None:
        found += current.handlers
        current = current.parent if current.propagate else None
    return found
