"""A Django signal's send, as the declarations map it: every start and signal worked out and
checked first, then written through `start()` and `signal()` in one atomic block that joins the
transaction the signal is sent in."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.dispatch import Signal

from ..client import instances as client
from ..conf import database_alias
from ..definitions import Workflow, check_priority
from ..engine.registry import registry
from ..engine.starts import check_key
from ..errors import WorkflowDefinitionError
from ..results import SignalResult, StartResult
from ..schedules.ids import is_occurrence_id
from ..store.jsonvalues import to_json
from .mappings import Argument, SignalOn, StartOn, Where, declared, resolve_sender


@dataclass(frozen=True)
class _Start:
    definition: Workflow
    id: str
    input: Any
    options: dict[str, Any]


@dataclass(frozen=True)
class _Signal:
    name: str
    key: str | None
    id: str | None
    payload: Any


def _maps(signal: Signal, sender: Any, mapped_signal: Signal, mapped_sender: Any) -> bool:
    return mapped_signal is signal and resolve_sender(mapped_sender) is sender


def _text(argument: Argument, kwargs: dict[str, Any], where: object, using: str) -> str | None:
    """An id or key the declaration derives: a string that fits its column, or None."""
    return _checked(argument.name, argument.resolve(kwargs, where), where, using)


def _checked(name: str, value: Any, where: object, using: str) -> str | None:
    """Raise TypeError or ValueError naming the declaration for an id or key that is not a
    string, or does not fit its column, before any SQL."""
    if value is not None and not isinstance(value, str):
        raise TypeError(
            f"{where}: the {name} function must return a string, not "
            f"{type(value).__name__} ({value!r})."
        )
    with _named(where):
        check_key(f"the {name}", value, using)
    return value


@contextmanager
def _named(where: object) -> Iterator[None]:
    """Prefix a TypeError or ValueError with the declaration's label: made only on failure,
    as the label of a signal of your own is looked up in the loaded modules."""
    try:
        yield
    except (TypeError, ValueError) as error:
        raise type(error)(f"{where}: {error}") from None


def _json(argument: Argument, kwargs: dict[str, Any], where: object, using: str) -> Any:
    value = argument.resolve(kwargs, where)
    with _named(where):
        return to_json(value, f"the {argument.name}", using=using)


def _wanted(when: Argument | None, kwargs: dict[str, Any], where: object) -> bool:
    return when is None or bool(when.resolve(kwargs, where))


def _start(
    definition: Workflow, declaration: StartOn, kwargs: dict[str, Any], using: str
) -> _Start | None:
    where = Where(declaration, definition)
    if not _wanted(declaration.when, kwargs, where):
        return None
    id = _text(declaration.id, kwargs, where, using)
    if not id:
        raise ValueError(f"{where}: the id must be a non-empty string, not {id!r}.")
    if is_occurrence_id(id):
        raise ValueError(
            f"{where}: the id {id!r} has the form of a schedule occurrence's, <schedule "
            f"id>@<time>, which only that occurrence's instance takes: make the declaration's "
            f"id give another form (a prefix of its own, as 'order-<pk>', and no '@<time>' "
            f"at its end)."
        )
    value = _json(declaration.input, kwargs, where, using)
    # Each passed only when not None: start() gets only the options the declaration uses.
    options = {}
    for option in declaration.options:
        resolved = option.resolve(kwargs, where)
        if resolved is None:
            continue
        if option.name in ("concurrency_key", "rate_limit_key", "fair_key"):
            resolved = _checked(option.name, resolved, where, using)
        elif option.name == "priority":
            with _named(where):
                check_priority(resolved)
        options[option.name] = resolved
    return _Start(definition, id, value, options)


def _signal(
    declaration: SignalOn, definition: Workflow, kwargs: dict[str, Any], using: str
) -> _Signal | None:
    where = Where(declaration, definition)
    if not _wanted(declaration.when, kwargs, where):
        return None
    return _Signal(
        declaration.signal,
        _text(declaration.key, kwargs, where, using),
        _text(declaration.id, kwargs, where, using),
        _json(declaration.payload, kwargs, where, using),
    )


def _agreed(name: str, declarations: list[tuple[Workflow, SignalOn]]) -> None:
    """Raise WorkflowDefinitionError when versions of one workflow send one signal differently:
    a signal reaches the waiting instances of every version, so it is sent once."""
    first_definition, first = declarations[0]
    for definition, declaration in declarations[1:]:
        if not first.agrees_with(declaration):
            raise WorkflowDefinitionError(
                f"{first.label(first_definition)} and {declaration.label(definition)} send "
                f"signal {first.signal!r} differently (key, id, payload or when): the versions "
                f"of workflow {name!r} must declare it with the same functions and values, as "
                f"the signal is sent once to the waiting instances of every version."
            )


def plan(
    signal: Signal, sender: Any, kwargs: dict[str, Any], using: str
) -> tuple[list[_Start], list[_Signal]]:
    """The starts (of each workflow's highest version) and the signals (once per workflow
    signal, agreed by every version) this send maps to; each argument checked."""
    starts: list[_Start] = []
    signals: dict[str, _Signal] = {}
    for name in sorted({definition.name for definition in registry.all()}):
        latest = registry.latest(name)
        assert latest is not None
        for declaration in declared(latest):
            if isinstance(declaration, StartOn) and _maps(
                signal, sender, declaration.signal, declaration.sender
            ):
                start = _start(latest, declaration, kwargs, using)
                if start is not None:
                    starts.append(start)
        by_signal: dict[str, list[tuple[Workflow, SignalOn]]] = {}
        for definition in (d for d in registry.all() if d.name == name):
            for declaration in declared(definition):
                if isinstance(declaration, SignalOn) and _maps(
                    signal, sender, declaration.django_signal, declaration.sender
                ):
                    by_signal.setdefault(declaration.signal, []).append((definition, declaration))
        for mapped in by_signal.values():
            _agreed(name, mapped)
            definition, declaration = mapped[-1]  # the highest version's
            sent = _signal(declaration, definition, kwargs, using)
            if sent is not None:
                # Workflows that send one signal alike send it once.
                same = json.dumps([sent.name, sent.key, sent.id, sent.payload], sort_keys=True)
                signals.setdefault(same, sent)
    return starts, list(signals.values())


def deliver(
    signal: Signal, sender: Any, kwargs: dict[str, Any]
) -> list[StartResult | SignalResult]:
    """Start and signal what this send maps to, in one atomic block on the workflows' database
    (a savepoint inside the caller's transaction: it commits or rolls back with it). Returns
    the StartResults and SignalResults; raises what start() or signal() raise, or TypeError or
    ValueError naming the declaration for a bad argument, before anything is written."""
    using = database_alias()
    starts, signals = plan(signal, sender, kwargs, using)
    if not starts and not signals:
        return []
    results: list[StartResult | SignalResult] = []
    # A savepoint: a failure leaves the caller's transaction usable for send_robust() callers.
    with transaction.atomic(using=using):
        for start in starts:
            results.append(
                client.start(
                    start.definition,
                    start.input,
                    id=start.id,
                    version=start.definition.version,
                    using=using,
                    **start.options,
                )
            )
        for sent in signals:
            results.append(
                client.signal(sent.name, sent.payload, key=sent.key, id=sent.id, using=using)
            )
    return results
