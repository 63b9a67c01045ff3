"""manage.py purgeworkflows --older-than 30d: the nightly retention job."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ...cli.options import command_database, command_duration
from ...client.operations import purge
from ...models import FINISHED


class Command(BaseCommand):
    help = (
        "Delete finished workflow instances older than --older-than, the signals no instance "
        "can take any more, the rate-limit windows that ended, and the workers gone for a day."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            required=True,
            help='How long ago they finished, e.g. "30d".',
        )
        parser.add_argument(
            "--status",
            action="append",
            choices=list(FINISHED),
            help="Purge only these statuses (repeatable); default completed, failed and cancelled.",
        )
        parser.add_argument("--batch-size", type=int, default=500)
        parser.add_argument("--database", default=None, help="The database alias of the workflows.")

    def handle(self, *args: Any, **options: Any) -> None:
        using = command_database(options["database"])
        result = purge(
            older_than=command_duration(options["older_than"], "--older-than"),
            status=options["status"],
            batch_size=options["batch_size"],
            using=using,
        )
        self.stdout.write(
            f"Purged {result.instances} instance(s), {result.signals} signal(s), "
            f"{result.rate_limits} rate-limit window(s) and {result.workers} gone worker(s)."
        )
