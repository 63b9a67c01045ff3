"""System checks (manage.py check): configuration the engine cannot run correctly with."""

from __future__ import annotations

from typing import Any

import django
from django.conf import settings
from django.core.checks import Error, Tags, Warning, register
from django.db import connections
from django.utils.module_loading import import_string

from .conf import get_settings


@register()
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """E001: DJANGO_WORKFLOWS is invalid. E002: USE_TZ is off. E006: a codec that cannot be
    built or does not give back what it encoded."""
    problems: list[Any] = []
    try:
        configured = get_settings()
    except (ValueError, TypeError) as error:
        problems.append(Error(str(error), id="django_workflows.E001"))
    else:
        problems += _check_retry_and_clock(configured)
        problems += _check_codecs()
    if not settings.USE_TZ:
        problems.append(
            Error(
                "django_workflows stores aware UTC datetimes: set USE_TZ = True.",
                id="django_workflows.E002",
            )
        )
    return problems


def _check_retry_and_clock(configured: Any) -> list[Any]:
    """E001 for a RETRY the steps could not use, and a CLOCK that cannot tell the time."""
    from .retries import RetryPolicy

    problems = []
    try:
        RetryPolicy().merged(configured.retry, "DJANGO_WORKFLOWS['RETRY']")
    except (ValueError, TypeError) as error:
        problems.append(Error(f"DJANGO_WORKFLOWS['RETRY']: {error}", id="django_workflows.E001"))
    clock = configured.clock
    try:
        if isinstance(clock, str):
            clock = import_string(clock)
            if isinstance(clock, type):
                clock = clock()
        if clock is not None and not callable(getattr(clock, "now", None)):
            raise TypeError(f"{clock!r} has no now() method")
    except (ImportError, TypeError) as error:
        problems.append(
            Error(
                f"DJANGO_WORKFLOWS['CLOCK'] must be a clock (an object with now() returning an "
                f"aware datetime), its class, or a dotted path to either: {error}.",
                id="django_workflows.E001",
            )
        )
    return problems


def _check_codecs() -> list[Any]:
    from . import codecs

    try:
        configured = codecs.configured_codecs()
        for codec in configured:
            at = codecs.where("check", codec.id)
            probe = {"django_workflows": "check", "n": [1, 2.5, None, True]}
            if codec.decode(codec.encode(probe, at), at) != probe:
                raise ValueError(f"codec {codec.id!r} does not decode what it encoded.")
    except Exception as error:  # a codec of the application's own may raise anything
        return [Error(f"DJANGO_WORKFLOWS['CODEC']: {error}", id="django_workflows.E006")]
    return []


@register()
def check_definitions(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """E003: a workflow name longer than its column. E007: one schedule id declared by two
    workflows (a bad id, timing or option fails at the declaration, with a ValueError). E008: a
    concurrency or rate-limit key on a workflow whose limits in force have no per-key limit."""
    from .models import KEY_LENGTH
    from .registry import registry

    problems: list[Any] = []
    declared_by: dict[str, str] = {}
    for definition in registry.all():
        for schedule in definition.schedules:
            other = declared_by.setdefault(schedule.id, definition.name)
            if other != definition.name:
                problems.append(
                    Error(
                        f"Schedule id {schedule.id!r} is declared by workflows {other!r} and "
                        f"{definition.name!r}: a schedule id is unique across the application.",
                        id="django_workflows.E007",
                    )
                )
        problems += _check_limit_keys(definition, registry.latest(definition.name))
        if len(definition.name) > KEY_LENGTH:
            problems.append(
                Error(
                    f"Workflow name {definition.name[:40]!r}... is longer than {KEY_LENGTH} characters.",
                    id="django_workflows.E003",
                )
            )
    return problems


@register(Tags.database)
def check_database(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[Any]:
    """E004: PostgreSQL stricter than READ COMMITTED; E005: MariaDB < 10.6 or MySQL < 8.0.1;
    W002: an id, name or key column of MySQL or MariaDB that does not compare exactly."""
    problems: list[Any] = []
    try:
        alias = get_settings().database
    except (ValueError, TypeError):
        return problems
    if databases is not None and alias not in databases:
        return problems
    connection: Any = connections[alias]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SHOW default_transaction_isolation")
            level = cursor.fetchone()[0]
        configured = connection.settings_dict.get("OPTIONS", {}).get("isolation_level")
        if level != "read committed" or configured not in (None, 1):
            problems.append(
                Error(
                    f"The workflow database {alias!r} runs transactions at {level.upper()}: the "
                    f"store relies on READ COMMITTED, PostgreSQL's default.",
                    id="django_workflows.E004",
                )
            )
    elif connection.vendor == "sqlite":
        mode = connection.settings_dict.get("OPTIONS", {}).get("transaction_mode")
        if django.VERSION >= (5, 1) and mode != "IMMEDIATE":
            problems.append(
                Warning(
                    f"The workflow database {alias!r} is SQLite without "
                    f'OPTIONS["transaction_mode"] = "IMMEDIATE": the worker\'s threads can then fail '
                    f'with "database is locked" when two of them upgrade a read to a write at once.',
                    hint='Set "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20}.',
                    id="django_workflows.W001",
                )
            )
    elif connection.vendor == "mysql":
        version = connection.mysql_version
        if connection.mysql_is_mariadb and version < (10, 6):
            problems.append(
                Error(
                    f"MariaDB {'.'.join(map(str, version))} lacks SELECT ... SKIP LOCKED: use 10.6 or newer.",
                    id="django_workflows.E005",
                )
            )
        elif not connection.mysql_is_mariadb and version < (8, 0, 1):
            problems.append(
                Error(
                    f"MySQL {'.'.join(map(str, version))} lacks SELECT ... SKIP LOCKED: use 8.0.1 or newer.",
                    id="django_workflows.E005",
                )
            )
        problems += _check_collations(alias, connection)
    return problems


def _check_collations(alias: str, connection: Any) -> list[Any]:
    """W002: key columns on a PAD SPACE collation (`"a "` equals `"a"`) or one that is not
    binary, as tables created before migration 0003 have them."""
    from django.apps import apps

    from .collations import MYSQL_EXACT, PADDED_BINARY, exact_collation, inexact_columns

    columns = inexact_columns(connection, apps.get_app_config("django_workflows").get_models())
    if not columns:
        return []
    exact = exact_collation(connection)
    listed = ", ".join(f"{c.table}.{c.name} ({c.collation})" for c in columns)
    if exact == PADDED_BINARY:
        hint = f"Use MySQL 8.0.17 or newer, whose {MYSQL_EXACT} compares exactly."
    else:
        hint = (
            f"Run `manage.py migrate django_workflows`: migration 0003_exact_keys moves them "
            f"onto {exact}. Where it is applied already (tables restored from an older dump), "
            f"apply it again: `manage.py migrate django_workflows 0002`, then "
            f"`manage.py migrate django_workflows`."
        )
    return [
        Warning(
            f"The workflow database {alias!r} compares {len(columns)} id, name and key "
            f"column(s) inexactly (trailing spaces or case ignored), so that a signal keyed "
            f'"user-1 " would wake the wait for "user-1": {listed}.',
            hint=hint,
            id="django_workflows.W002",
        )
    ]


def _check_limit_keys(definition: Any, latest: Any) -> list[Any]:
    """E008: limits come from the highest registered version, for every version; a version
    whose limit has a key, when the highest has no per-key limit of that kind, computes keys
    (and start() takes them) that limit nothing."""
    if latest is None or latest is definition:
        return []
    problems = []
    for kind, keyed, in_force in (
        ("concurrency", definition.key_limits, latest.key_limits),
        ("rate-limit", definition.key_rate_limits, latest.key_rate_limits),
    ):
        if keyed and not in_force:
            problems.append(
                Error(
                    f"Workflow {definition.name!r} version {definition.version} has a {kind} "
                    f"key, but the limits in force, those of its highest registered version "
                    f"({latest.version}), have no per-key {kind} limit: its keys limit nothing.",
                    hint=f"Give version {latest.version} a {kind} limit with a key, or drop the key.",
                    obj=definition.name,
                    id="django_workflows.E008",
                )
            )
    return problems
