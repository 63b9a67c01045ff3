"""manage.py purgeworkflows --older-than 30d: the nightly retention job."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ...client.operations import purge
from ...durations import parse_duration
from ...models import FINISHED


class Command(BaseCommand):
    help = (
        "Delete finished workflow instances older than --older-than, the signals no instance "
        "can take any more, the rate-limit windows that ended, and the workers gone for a day."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            type=parse_duration,
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
        parser.add_argument("--database", default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        result = purge(
            older_than=options["older_than"],
            status=options["status"],
            batch_size=options["batch_size"],
            using=options["database"],
        )
        self.stdout.write(
            f"Purged {result.instances} instance(s), {result.signals} signal(s), "
            f"{result.rate_limits} rate-limit window(s) and {result.workers} gone worker(s)."
        )
