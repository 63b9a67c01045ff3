"""The options the management commands share, checked with errors that name the valid forms:
--database and the durations."""

from __future__ import annotations

from datetime import timedelta
from typing import overload

from django.conf import settings
from django.core.management.base import CommandError

from ..conf import database_alias
from ..durations import is_duration_text, parse_duration


def command_database(option: str | None) -> str:
    """The alias of the workflows' database for a command's --database (None: the DATABASE
    setting); a CommandError when DATABASES has no such alias."""
    try:
        using = database_alias(option)  # also validates DJANGO_WORKFLOWS
    except (ValueError, TypeError) as error:
        raise CommandError(str(error)) from None
    if using not in settings.DATABASES:
        given = f"--database {option}" if option else f"DJANGO_WORKFLOWS['DATABASE'] {using!r}"
        raise CommandError(
            f"{given}: no such database; settings.DATABASES has {', '.join(settings.DATABASES)}."
        )
    return using


@overload
def command_duration(option: str, flag: str) -> timedelta: ...
@overload
def command_duration(option: str | None, flag: str) -> timedelta | None: ...
def command_duration(option: str | None, flag: str) -> timedelta | None:
    """A duration option's value (None when not given); a CommandError naming the flag and the
    forms a duration takes when it is not one."""
    if option is None:
        return None
    if not is_duration_text(option):
        raise CommandError(
            f"{flag} {option}: not a duration; give e.g. 30s, 5m, 2h, 7d or 1h30m "
            f"(units ms, s, m, h, d and w)."
        )
    try:
        return parse_duration(option, flag)
    except ValueError as error:  # longer than a duration can be
        raise CommandError(str(error)) from None
