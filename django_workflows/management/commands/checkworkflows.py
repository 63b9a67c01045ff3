"""manage.py checkworkflows [--replay]: the app's system checks, or the pre-deploy replay check
(engine/replaycheck.py) of the stored journals against this code."""

from __future__ import annotations

import sys
from typing import Any

from django.apps import apps
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...cli.options import command_database
from ...engine.replaycheck import NotMigrated, check_instances
from ...errors import WorkflowNotFoundError


class Command(BaseCommand):
    help = (
        "Without --replay: run the django_workflows system checks (settings, codecs, limits, "
        "and those that query its database) and exit non-zero on an error. With --replay: replay the journal of every unfinished "
        "workflow instance against the code registered in this deployment, without running a "
        "step or writing anything; print one line per instance whose code no longer matches "
        "its journal (a step renamed, removed, reordered or of another kind; a version that is "
        "not registered) and exit 1 when there is one, 0 otherwise."
    )
    requires_system_checks: list[str] = []  # run below, for this app only, without --replay

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--replay",
            action="store_true",
            help="Replay the stored journals against this code (for CI before a deploy).",
        )
        parser.add_argument(
            "--workflow", metavar="NAME", help="Replay only the instances of this workflow."
        )
        parser.add_argument(
            "--include-finished",
            type=int,
            metavar="DAYS",
            help="Replay also the instances that finished in the last DAYS days.",
        )
        parser.add_argument(
            "--limit", type=int, metavar="N", help="Replay at most N instances (in id order)."
        )
        parser.add_argument("--database", default=None, help="The database alias of the workflows.")

    def handle(self, *args: Any, **options: Any) -> None:
        using = command_database(options["database"])
        if not options["replay"]:
            if any(options[o] is not None for o in ("workflow", "include_finished", "limit")):
                raise CommandError("--workflow, --include-finished and --limit go with --replay.")
            self.check(
                app_configs=[apps.get_app_config("django_workflows")],
                databases=[using],
                display_num_errors=True,
            )
            return
        try:
            outcomes = check_instances(
                workflow=options["workflow"],
                include_finished=options["include_finished"],
                limit=options["limit"],
                using=using,
            )
        except (TypeError, ValueError, NotMigrated, WorkflowNotFoundError) as error:
            raise CommandError(str(error)) from None
        checked = mismatched = 0
        for outcome in outcomes:
            checked += 1
            if outcome.problem is not None:
                mismatched += 1
                self.stdout.write(outcome.line())
        if mismatched:
            self.stdout.write(
                f"Replayed {checked} instance(s): {mismatched} do not match this code."
            )
            sys.exit(1)
        self.stdout.write(f"Replayed {checked} instance(s): all match this code.")
