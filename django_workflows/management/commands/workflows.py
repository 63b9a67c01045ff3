"""manage.py workflows list|show|cancel|terminate|retry|delete|resume: the operator's command
line over the client (django_workflows/cli/)."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...cli.actions import action_command
from ...cli.arguments import add_subcommands
from ...cli.options import command_database
from ...cli.reads import list_command, show_command
from ...engine.replaycheck import NotMigrated, check_tables

EPILOG = (
    "The app's other commands: manage.py runworkflows runs the worker; manage.py "
    "workflowstatus prints the workers and each queue's backlog, for a probe; manage.py "
    "checkworkflows runs the app's system checks, and with --replay checks the stored journals "
    "against this code before a deploy; manage.py exportworkflow ID prints an instance as JSON "
    "for testing.replay(); manage.py purgeworkflows --older-than 30d deletes finished instances. "
    "Each has --help."
)


class Command(BaseCommand):
    help = (
        "Inspect and operate workflow instances from a shell: list, show, cancel, terminate, "
        "retry, delete, resume. Each goes through the client with its rules; --json on each for "
        "machines. Exit status: 0 when everything was done, 1 for bad input or when an id was "
        "refused or unknown, 2 for a usage error."
    )

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        return super().create_parser(prog_name, subcommand, epilog=EPILOG, **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        add_subcommands(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            check_tables(command_database(options["database"]))
        except NotMigrated as error:
            raise CommandError(str(error)) from None
        subcommand = options["subcommand"]
        run = {"list": list_command, "show": show_command}.get(subcommand, action_command)
        status = run(options, self.stdout, self.stderr)
        if status:
            sys.exit(status)
