"""The system checks of start_on and signal_on (manage.py check, and every startup's checks):
E009, a workflow that maps one Django signal and sender twice; E010, a concurrency or rate-limit
key for a workflow without a per-key limit of that kind; E011, a sender that names no model."""

from __future__ import annotations

from typing import Any

from django.core.checks import Error, register

from ..definitions import Workflow
from ..engine.registry import registry
from .mappings import SignalOn, StartOn, declared, resolve_sender


@register()
def check_triggers(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """E009, E010 and E011 for every registered workflow definition."""
    problems: list[Any] = []
    for definition in registry.all():
        problems += _check_definition(definition)
    return problems


def _check_definition(definition: Workflow) -> list[Any]:
    problems: list[Any] = []
    seen: dict[tuple[Any, ...], StartOn | SignalOn] = {}
    for declaration in declared(definition):
        try:
            sender = resolve_sender(declaration.sender)
        except LookupError:
            problems.append(
                Error(
                    f"{declaration.label(definition)}: the sender {declaration.sender!r} names no "
                    f"installed model.",
                    hint='Give the model class, or "app_label.ModelName" of an installed app.',
                    obj=definition.name,
                    id="django_workflows.E011",
                )
            )
            continue
        if isinstance(declaration, StartOn):
            mapping: tuple[Any, ...] = ("start", id(declaration.signal), id(sender))
            problems += _check_keys(definition, declaration)
        else:
            mapping = ("signal", id(declaration.django_signal), id(sender), declaration.signal)
        earlier = seen.setdefault(mapping, declaration)
        if earlier is not declaration:
            problems.append(
                Error(
                    f"{declaration.label(definition)} is declared twice: one send would "
                    f"{'start' if mapping[0] == 'start' else 'send'} it twice, differently.",
                    hint="Map each Django signal and sender once per workflow: choose with `when`, "
                    "and derive the differences from the signal's arguments with functions.",
                    obj=definition.name,
                    id="django_workflows.E009",
                )
            )
    return problems


def _check_keys(definition: Workflow, declaration: StartOn) -> list[Any]:
    """E010: start() refuses a key the workflow's limits cannot use; say so at startup."""
    problems = []
    given = {option.name for option in declaration.options}
    for option, kind, keyed in (
        ("concurrency_key", "Concurrency", definition.key_limits),
        ("rate_limit_key", "RateLimit", definition.key_rate_limits),
    ):
        if option in given and not keyed:
            problems.append(
                Error(
                    f"{declaration.label(definition)} gives a {option}, but the workflow has no "
                    f"{kind} with a key: start() would refuse every send.",
                    hint=f"Give the workflow a {kind}(..., key=...), or drop {option}.",
                    obj=definition.name,
                    id="django_workflows.E010",
                )
            )
    return problems
