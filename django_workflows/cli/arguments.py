"""The subcommands of `manage.py workflows` and their options, as argparse subparsers of the
command's parser."""

from __future__ import annotations

from argparse import SUPPRESS, ArgumentParser

from django.core.management.base import CommandParser


def add_subcommands(parser: CommandParser) -> None:
    """Add the subcommands (list, show, cancel, terminate, retry, delete, resume) to the
    command's parser; the chosen one's name lands in `options["subcommand"]`."""
    subcommands = parser.add_subparsers(
        dest="subcommand", metavar="SUBCOMMAND", title="subcommands", required=True
    )

    def add(name: str, help: str) -> ArgumentParser:
        # Given here, not only by the parent: Django 4.2's subparsers do not inherit it, and
        # without it a usage error from the shell would be a CommandError, not argparse's exit 2.
        sub: ArgumentParser = subcommands.add_parser(
            name,
            help=help,
            description=help,
            called_from_command_line=parser.called_from_command_line,
        )
        sub.add_argument(
            "--database", default=None, metavar="ALIAS", help="The database alias of the workflows."
        )
        sub.add_argument(
            "--json", action="store_true", help="Print JSON (times in ISO 8601) instead of text."
        )
        add_django_options(sub)
        return sub

    listing = add("list", "List instances, oldest first, a page at a time.")
    listing.add_argument(
        "--status",
        action="append",
        metavar="STATUS",
        help="Only these statuses (repeatable, or comma-separated).",
    )
    listing.add_argument("--workflow", metavar="NAME", help="Only instances of this workflow.")
    listing.add_argument(
        "--version", type=int, metavar="N", help="Only this version of the workflow."
    )
    listing.add_argument("--queue", metavar="NAME", help="Only instances in this queue.")
    listing.add_argument("--tag", metavar="TAG", help="Only instances with this tag.")
    listing.add_argument(
        "--subject",
        metavar="APP_LABEL.MODEL:PK",
        help='Only instances about this object, as "shop.order:42".',
    )
    listing.add_argument("--parent", metavar="ID", help="Only the children of this instance.")
    listing.add_argument(
        "--schedule", metavar="ID", help="Only instances that this schedule started."
    )
    listing.add_argument(
        "--limit", type=int, default=100, metavar="N", help="At most N instances (default 100)."
    )
    listing.add_argument(
        "--offset", type=int, default=0, metavar="N", help="Skip the first N (default 0)."
    )
    listing.add_argument(
        "-q", "--quiet", action="store_true", help="Print only the ids, one a line."
    )

    show = add("show", "Show one instance: its fields, waits, values, tags and error.")
    show.add_argument("id", help="The instance's id.")
    show.add_argument("--journal", action="store_true", help="Show its journal's entries too.")
    show.add_argument("--children", action="store_true", help="Show its children too.")

    def ids(sub: ArgumentParser) -> None:
        sub.add_argument("ids", nargs="+", metavar="ID", help="The instances' ids.")

    for name, verb in (("cancel", "Cancelled"), ("terminate", "Terminated")):
        sub = add(
            name,
            "Request a cancel: each instance stops at its next ctx call and runs its compensations."
            if name == "cancel"
            else "Request a terminate: each instance stops without running its compensations.",
        )
        ids(sub)
        sub.add_argument(
            "--reason",
            metavar="TEXT",
            help=f'What the instance records (default "{verb} with manage.py workflows {name} '
            f'by <user>.").',
        )

    retry = add("retry", "Run failed instances again from their journals.")
    ids(retry)
    deadline = retry.add_mutually_exclusive_group()
    deadline.add_argument(
        "--timeout", metavar="DURATION", help='A new run timeout from now, as "2d".'
    )
    deadline.add_argument("--no-timeout", action="store_true", help="No run timeout any more.")

    delete = add("delete", "Delete finished instances with their journals.")
    ids(delete)
    delete.add_argument(
        "--force",
        action="store_true",
        help="Delete unfinished ones too, without running their compensations.",
    )

    resume = add("resume", "Continue instances waiting at a breakpoint.")
    ids(resume)
    resume.add_argument(
        "--breakpoint",
        metavar="NAME",
        help="The breakpoint to resume (default: the only one each waits at).",
    )


def add_django_options(sub: ArgumentParser) -> None:
    """Django's own options of every command, taken after the subcommand too, as every other
    command takes them anywhere. Unless given there, the command's parser has their values
    (manage.py reads --settings and --pythonpath before any parser)."""
    django = sub.add_argument_group("Django's options (before or after the subcommand)")
    django.add_argument(
        "-v", "--verbosity", type=int, choices=[0, 1, 2, 3], default=SUPPRESS, help="0 to 3."
    )
    django.add_argument("--settings", default=SUPPRESS, help="The settings module.")
    django.add_argument("--pythonpath", default=SUPPRESS, help="A directory to add to sys.path.")
    for flag, help in (
        ("--traceback", "Raise on a CommandError."),
        ("--no-color", "Do not colour the output."),
        ("--force-color", "Colour the output."),
        ("--skip-checks", "Skip the system checks."),
    ):
        django.add_argument(flag, action="store_true", default=SUPPRESS, help=help)
