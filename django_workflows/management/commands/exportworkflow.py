"""manage.py exportworkflow ID: an instance with its journal as JSON (client/exports.py), the document
testing.replay() takes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...cli.options import command_database
from ...client.exports import export_instance
from ...engine.replaycheck import NotMigrated, check_tables
from ...errors import WorkflowNotFoundError, WorkflowPayloadError


class Command(BaseCommand):
    help = (
        "Print a workflow instance and its journal entries, in order, as JSON, its payloads "
        "decoded by the configured CODEC (an export holds them in clear): the document "
        "django_workflows.testing.replay() takes."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("id", help="The instance's id.")
        parser.add_argument(
            "--output", metavar="FILE", help="Write the JSON to FILE instead of printing it."
        )
        parser.add_argument("--database", default=None, help="The database alias of the workflows.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            using = command_database(options["database"])
            check_tables(using)
            document = export_instance(options["id"], using=using)
        except (NotMigrated, WorkflowNotFoundError, WorkflowPayloadError) as error:
            raise CommandError(str(error)) from None
        text = json.dumps(document, indent=2, ensure_ascii=False)
        if options["output"]:
            try:
                Path(options["output"]).write_text(text + "\n", encoding="utf-8")
            except OSError as error:
                raise CommandError(f"Cannot write {options['output']}: {error}") from None
            self.stdout.write(f"Wrote instance {options['id']!r} to {options['output']}.")
        else:
            self.stdout.write(text)
