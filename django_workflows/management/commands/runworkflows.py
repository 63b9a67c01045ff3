"""manage.py runworkflows: options in, Worker(...).run() out."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...cli.options import command_database, command_duration
from ...errors import WorkflowNotFoundError
from ...metrics import server as metrics_server
from ...store.tables import pending_migrations
from ...worker import process
from ...worker.worker import Worker


class Command(BaseCommand):
    help = "Run due workflow instances until stopped (SIGTERM or Ctrl-C hands them back)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--concurrency", type=int, help="Executions run at once (threads).")
        parser.add_argument("--poll-interval", help='e.g. "1s", "500ms".')
        parser.add_argument("--lease-duration", help='e.g. "30s".')
        parser.add_argument("--shutdown-timeout", help='e.g. "10s".')
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
        parser.add_argument(
            "--metrics-port",
            metavar="PORT",
            help="Serve the worker's metrics at http://ADDRESS:PORT/metrics (needs METRICS).",
        )
        parser.add_argument(
            "--metrics-address",
            default="0.0.0.0",
            metavar="ADDRESS",
            help="The address --metrics-port listens on (default: 0.0.0.0, every interface).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        logger = logging.getLogger("django_workflows")
        if not any(
            not isinstance(h, logging.NullHandler) for h in _handlers(logger)
        ):  # a project without LOGGING for us still sees what the worker does
            # On the error output itself, not through self.stderr: a terminal would show every
            # line in the bold red of a command's error.
            handler = logging.StreamHandler(options.get("stderr") or sys.stderr)
            handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
        using = command_database(options["database"])
        _check_migrated(using)
        _check_metrics(options)
        # Every option is checked here: under the reloader, in its first process too, which
        # then only restarts the child that serves.
        worker = self._worker(options)
        if options["once"]:
            # The run loop's thread pool and batched claims, until idle (drain() runs one
            # instance at a time, for tests).
            _serve_metrics(options)
            executed = process.serve(worker, worker.run_until_idle)
            self.stdout.write(f"Ran {executed} execution(s).")
            return
        reload = settings.DEBUG if options["reload"] is None else options["reload"]
        if reload:
            # The metrics port opens in the child that runs the worker, not in the first process.
            process.serve_reloading(worker, before=lambda: _serve_metrics(options))
        else:
            _serve_metrics(options)
            process.serve(worker)

    def _worker(self, options: dict[str, Any]) -> Worker:
        try:
            return Worker(
                concurrency=options["concurrency"],
                poll_interval=command_duration(options["poll_interval"], "--poll-interval"),
                lease_duration=command_duration(options["lease_duration"], "--lease-duration"),
                shutdown_timeout=command_duration(
                    options["shutdown_timeout"], "--shutdown-timeout"
                ),
                workflows=options["workflows"],
                using=options["database"],
                queues=options.get("queues"),
            )
        except (ValueError, WorkflowNotFoundError) as error:  # a bad option or setting
            raise CommandError(str(error)) from None


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


def _check_metrics(options: dict[str, Any]) -> None:
    """Refuse a --metrics-port the worker cannot serve (a bad port or address, METRICS off or
    the extra missing), naming the fix; leave the options' port and address checked."""
    if options["metrics_port"] is None:
        return
    refusal = metrics_server.refusal()
    if refusal is not None:
        raise CommandError(refusal)
    try:
        options["metrics_port"] = metrics_server.check_port(options["metrics_port"])
        options["metrics_address"] = metrics_server.check_address(options["metrics_address"])
    except ValueError as error:
        raise CommandError(str(error)) from None


def _serve_metrics(options: dict[str, Any]) -> None:
    """Serve the worker's metrics on --metrics-port, if given (checked by _check_metrics)."""
    if options["metrics_port"] is None:
        return
    try:
        metrics_server.serve(options["metrics_port"], options["metrics_address"])
    except OSError as error:
        raise CommandError(str(error)) from None
    logging.getLogger("django_workflows").info(
        "Serving the worker's metrics at http://%s:%s/metrics.",
        options["metrics_address"],
        options["metrics_port"],
    )


def _handlers(logger: logging.Logger) -> list[logging.Handler]:
    """The handlers a record of `logger` reaches, following propagation."""
    found: list[logging.Handler] = []
    current: logging.Logger | None = logger
    while current is not None:
        found += current.handlers
        current = current.parent if current.propagate else None
    return found
