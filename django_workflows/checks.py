"""System checks (manage.py check): configuration the engine cannot run correctly with."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register
from django.db import DEFAULT_DB_ALIAS
from django.utils.module_loading import import_string

from . import clock, codecs, middleware
from .conf import database_alias, get_settings
from .durations import parse_duration
from .engine.registry import registry, signature_problem
from .engine.retries import RetryPolicy
from .metrics import counters as metrics_counters
from .models import KEY_LENGTH
from .store import workers as worker_registry
from .store.backends import backend
from .store.tables import pending_migrations

# How far back check_queues looks in the registry of workers for the queues they list.
QUEUES_SEEN_WITHIN = timedelta(days=1)


@register()
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """E001: DJANGO_WORKFLOWS is invalid. E002: USE_TZ is off. E006: a codec that cannot be
    built or does not give back what it encoded. E012: a STEP_MIDDLEWARE path that does not
    import, or whose factory gives no handler. E015: METRICS on without prometheus_client."""
    problems: list[Any] = []
    try:
        configured = get_settings()
    except (ValueError, TypeError) as error:
        problems.append(Error(str(error), id="django_workflows.E001"))
    else:
        problems += _check_retry_and_clock(configured)
        problems += _check_codecs()
        problems += _check_step_middleware(configured)
        if configured.metrics and not metrics_counters.installed():
            problems.append(
                Error(
                    "DJANGO_WORKFLOWS['METRICS'] is True, and the prometheus_client package "
                    "it counts with is not installed.",
                    hint=f"Install the extra `prometheus` ({metrics_counters.INSTALL}), or "
                    "set METRICS to False.",
                    id="django_workflows.E015",
                )
            )
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


def _check_step_middleware(configured: Any) -> list[Any]:
    try:
        middleware.load(configured.step_middleware)
    except Exception as error:  # an application's factory may raise anything
        return [
            Error(
                f"DJANGO_WORKFLOWS['STEP_MIDDLEWARE'] cannot be built: {error}",
                hint="Each entry is the dotted path of a factory, factory(call_next) -> "
                "handler(invocation), as Django's MIDDLEWARE.",
                id="django_workflows.E012",
            )
        ]
    return []


@register()
def check_definitions(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """E003: a workflow name longer than its column. E007: one schedule id declared by two
    workflows (a bad id, timing or option fails at the declaration, with a ValueError). E008: a
    concurrency or rate-limit key on a workflow whose limits in force have no per-key limit.
    E013: a workflow function that cannot be called as (ctx, input). E014: a ctx.sleep() or
    ctx.timer() in a workflow's code whose duration, written as a literal, is not one. W004: atomic steps in a workflow whose DATABASE is not "default"."""

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
        problems += _check_atomic_steps(definition)
        problem = signature_problem(definition)
        if problem is not None:
            problems.append(Error(problem, obj=definition.name, id="django_workflows.E013"))
        problems += _check_literal_durations(definition)
        if len(definition.name) > KEY_LENGTH:
            problems.append(
                Error(
                    f"Workflow name {definition.name[:40]!r}... is longer than {KEY_LENGTH} characters.",
                    id="django_workflows.E003",
                )
            )
    return problems


_ATOMIC = re.compile(r"\batomic\s*=\s*True\b")


def _check_atomic_steps(definition: Any) -> list[Any]:
    """W004 when the workflows' DATABASE is not "default" and the workflow's code (its function
    or class, as `inspect` reads it) asks for `atomic=True`: an atomic step's transaction is on
    the workflows' alias, so the business rows it covers must be there too."""
    try:
        alias = database_alias()
    except (ValueError, TypeError):  # the settings cannot be read: E001 says why
        return []
    if alias == DEFAULT_DB_ALIAS:
        return []
    try:
        source = inspect.getsource(inspect.unwrap(definition.target or definition.run))
    except (OSError, TypeError):  # no source to read (built at run time): nothing to say
        return []
    if not _ATOMIC.search(source):
        return []
    return [
        Warning(
            f"Workflow {definition.name!r} has atomic steps, and the workflows' DATABASE is "
            f"{alias!r}: an atomic step's transaction covers only the writes on {alias!r}, "
            "so writes on other databases inside it are not exactly-once.",
            hint="Keep the business rows an atomic step writes on the DATABASE alias, or make "
            "the step idempotent instead of atomic.",
            id="django_workflows.W004",
        )
    ]


def _check_literal_durations(definition: Any) -> list[Any]:
    """E014 for each ctx.sleep() and ctx.timer() in the workflow's code (its function or class,
    as `inspect` reads it) whose duration is a literal that is not a duration: at run time it
    fails the instance after the steps before it ran. Durations computed at run time are not
    seen."""
    try:
        code = inspect.unwrap(definition.target or definition.run)
        lines, first = inspect.getsourcelines(code)
        tree = ast.parse(textwrap.dedent("".join(lines)))
        parameters = list(inspect.signature(definition.run).parameters)
    except (OSError, TypeError, SyntaxError, ValueError):  # no source to read: nothing to say
        return []
    contexts = {"ctx", *parameters[:1]}
    problems = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("sleep", "timer")
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in contexts
        ):
            continue
        sleep = node.func.attr == "sleep"
        place = 1 if sleep else 0
        given = [k.value for k in node.keywords if k.arg == "duration"] + node.args[place:]
        duration = given[0] if given else None
        if not isinstance(duration, ast.Constant) or not isinstance(
            duration.value, str | int | float
        ):
            continue
        name = node.args[0] if sleep and node.args else None
        what = (
            f'ctx.sleep("{name.value}") duration'
            if isinstance(name, ast.Constant) and isinstance(name.value, str)
            else f"ctx.{node.func.attr}() duration"
        )
        try:
            parse_duration(duration.value, what)
        except ValueError as error:
            line = first + node.lineno - 1
            problems.append(
                Error(
                    f"Workflow {definition.name!r}, line {line} of "
                    f"{inspect.getsourcefile(code)}: {error}",
                    hint="Fix the duration: at run time it fails the instance after the steps "
                    "before it ran.",
                    obj=definition.name,
                    id="django_workflows.E014",
                )
            )
    return problems


@register(Tags.database)
def check_database(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[Any]:
    """The checks of the workflow database's backend: E004, PostgreSQL stricter than READ
    COMMITTED; W001, SQLite without IMMEDIATE transactions; E005, MariaDB < 10.6 or MySQL <
    8.0.1; W002, an id, name or key column of MySQL or MariaDB that does not compare exactly."""
    try:
        alias = get_settings().database
    except (ValueError, TypeError):
        return []
    if databases is not None and alias not in databases:
        return []
    return list(backend(alias).check())


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


@register(Tags.database)
def check_queues(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[Any]:
    """W003: a queue of a registered workflow (@workflow(queue=...)) or of an unfinished
    instance that no worker seen in the last day lists. It knows the workers from the registry
    of worker processes (WorkerProcess rows, which every runworkflows process writes); with no
    row seen in the last day (a new database, tests, drain() alone) it says nothing."""
    try:
        alias = get_settings().database
    except (ValueError, TypeError):
        return []  # E001 names the setting
    # As Django's own database checks: only when asked for a database (check --database,
    # migrate), and not before the tables it reads exist (migrate runs the checks first).
    if databases is None or alias not in databases or pending_migrations(alias):
        return []
    if not settings.USE_TZ:
        return []  # E002 names it; the registry's times cannot be compared without it
    try:
        now = clock.now()
    except Exception:  # a CLOCK that cannot tell the time: E001 names it
        return []
    seen = worker_registry.seen_since(alias, now - QUEUES_SEEN_WITHIN)
    if not seen or any(not worker.queues for worker in seen):
        return []  # nothing known of this deployment's workers, or one claims every queue
    listed = {queue for worker in seen for queue in worker.queues}
    of_workflows: dict[str, list[str]] = {}
    for definition in registry.all():
        of_workflows.setdefault(definition.queue, []).append(definition.name)
    of_instances = worker_registry.unfinished_queues(alias)
    problems = []
    for queue in sorted((set(of_workflows) | of_instances) - listed):
        whose = [f"workflow {name!r}" for name in sorted(set(of_workflows.get(queue, [])))]
        if queue in of_instances:
            whose.append("unfinished instances")
        problems.append(
            Warning(
                f"Queue {queue!r} (of {', '.join(whose)}) is listed by no worker seen in the "
                f"last day: the registry of worker processes (WorkerProcess rows, written by "
                f"each runworkflows process) has {len(seen)} worker(s) seen since, listing "
                f"only {', '.join(repr(q) for q in sorted(listed))}. Its instances wait until "
                f"a worker claims from it.",
                hint=f"Run a worker with `runworkflows --queue {queue}` (or one without "
                f"--queue, which claims from every queue).",
                obj=queue,
                id="django_workflows.W003",
            )
        )
    return problems
