"""What `start_on` and `signal_on` declare (StartOn, SignalOn, each argument a value or a function
of the Django signal's keyword arguments), and where the declarations are kept: on the workflow
definition, or on the function `@workflow` has yet to decorate."""

from __future__ import annotations

import inspect
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.dispatch import Signal

from ..definitions import Workflow

ATTRIBUTE = "_django_workflows_triggers"
"""The attribute of a function (or class) that holds the declarations stacked below @workflow."""


def _signature(function: Callable[..., Any]) -> inspect.Signature | None:
    """The function's signature, or None when it has none to check (a builtin: called as is)."""
    try:
        return inspect.signature(function)
    except (TypeError, ValueError):
        return None


def _parameters(function: Callable[..., Any]) -> frozenset[str] | None:
    """The keyword names `function` takes, or None when it takes **kwargs (or cannot say)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return frozenset(p.name for p in parameters if p.kind in kinds)


class Argument:
    """One argument of a declaration: a value, or a function of the signal's keyword arguments
    (`sender`, `signal`, and what the signal sends: `instance`, `created`, ...). A function that
    takes no **kwargs is given only the arguments it names."""

    def __init__(self, name: str, value: Any) -> None:
        self.name = name
        self.value = value
        self.function = callable(value)
        self._takes = _parameters(value) if self.function else None
        self._signature = _signature(value) if self.function else None

    def resolve(self, kwargs: dict[str, Any], where: object) -> Any:
        """The value, or what the function returns for these keyword arguments. Raises
        TypeError naming `where` when the function needs an argument the signal does not send."""
        if not self.function:
            return self.value
        given = (
            kwargs if self._takes is None else {k: kwargs[k] for k in self._takes & kwargs.keys()}
        )
        if self._signature is not None:
            try:
                self._signature.bind(**given)
            except TypeError as error:
                raise TypeError(
                    f"{where}: the {self.name} function cannot be called with the signal's "
                    f"keyword arguments ({', '.join(sorted(kwargs))}): {error}."
                ) from None
        return self.value(**given)

    def same_as(self, other: Argument | None) -> bool:
        """Whether `other` declares the same: the same function, or an equal value."""
        if other is None:
            return False
        if self.function or other.function:
            return self.value is other.value
        return bool(self.value == other.value)


def signal_label(signal: Signal) -> str:
    """A Django signal's name where a module defines it (`post_save`, `shop.signals.reported`);
    for messages only: it looks through the loaded modules."""
    from django.db.models import signals as models

    for name, value in vars(models).items():
        if value is signal:
            return name
    for module_name, module in list(sys.modules.items()):
        for name, value in list(getattr(module, "__dict__", {}).items()):
            if value is signal:
                return f"{module_name}.{name}"
    return f"a {type(signal).__name__}"


def sender_label(sender: Any) -> str:
    if isinstance(sender, str):
        return sender  # a model's "app_label.ModelName"
    meta = getattr(sender, "_meta", None)
    if isinstance(sender, type) and meta is not None:
        return str(meta.label)
    return getattr(sender, "__qualname__", None) or repr(sender)


class Where:
    """A declaration's label in a message, worked out only if a message is made."""

    def __init__(self, declaration: StartOn | SignalOn, definition: Workflow) -> None:
        self.declaration = declaration
        self.definition = definition

    def __str__(self) -> str:
        return self.declaration.label(self.definition)


@dataclass(frozen=True, eq=False)
class StartOn:
    """`start_on(signal, sender=...)`: a send of `signal` by `sender` starts the workflow."""

    signal: Signal
    sender: Any  # None, a model class, "app_label.Model", or any object a Signal takes
    id: Argument
    input: Argument
    when: Argument | None
    options: tuple[Argument, ...]  # start()'s keyword arguments that were given

    def label(self, definition: Workflow | None = None) -> str:
        sender = "" if self.sender is None else f", sender={sender_label(self.sender)}"
        of = (
            ""
            if definition is None
            else f" of workflow {definition.name!r} version {definition.version}"
        )
        return f"start_on({signal_label(self.signal)}{sender}){of}"


@dataclass(frozen=True, eq=False)
class SignalOn:
    """`signal_on(django_signal, signal=..., sender=...)`: a send of `django_signal` by `sender`
    sends the workflow signal `signal`."""

    django_signal: Signal
    sender: Any
    signal: str  # the workflow signal's name
    key: Argument
    id: Argument
    payload: Argument
    when: Argument | None

    def label(self, definition: Workflow | None = None) -> str:
        sender = "" if self.sender is None else f", sender={sender_label(self.sender)}"
        of = (
            ""
            if definition is None
            else f" of workflow {definition.name!r} version {definition.version}"
        )
        return f"signal_on({signal_label(self.django_signal)}{sender}, signal={self.signal!r}){of}"

    def agrees_with(self, other: SignalOn) -> bool:
        """Whether two versions' declarations send the same signal the same way."""
        return all(
            mine.same_as(theirs) if mine is not None else theirs is None
            for mine, theirs in (
                (self.key, other.key),
                (self.id, other.id),
                (self.payload, other.payload),
                (self.when, other.when),
            )
        )


Declaration = StartOn | SignalOn

_on_definitions: weakref.WeakKeyDictionary[Workflow, list[Declaration]] = (
    weakref.WeakKeyDictionary()
)
_pairs: dict[tuple[int, int], tuple[Signal, Any]] = {}


def attach(target: Any, declaration: Declaration) -> None:
    """Keep `declaration` on a workflow definition, or on the function or class below @workflow."""
    if isinstance(target, Workflow):
        _on_definitions.setdefault(target, []).append(declaration)
    else:
        # Its own attribute, not one a class inherits: a subclass declares its own.
        if ATTRIBUTE not in vars(target):
            setattr(target, ATTRIBUTE, [])
        getattr(target, ATTRIBUTE).append(declaration)
    signal = declaration.signal if isinstance(declaration, StartOn) else declaration.django_signal
    _pairs[(id(signal), id(declaration.sender))] = (signal, declaration.sender)


def declared(definition: Workflow) -> list[Declaration]:
    """The start_on and signal_on declarations of one workflow definition, in either order."""
    below = getattr(definition.target, "__dict__", {}).get(ATTRIBUTE, [])
    return [*below, *_on_definitions.get(definition, [])]


def declared_pairs() -> list[tuple[Signal, Any]]:
    """Every (Django signal, sender) some declaration maps, as declared."""
    return list(_pairs.values())


def resolve_sender(sender: Any) -> Any:
    """A model's "app_label.ModelName" as its class (the registry must be ready); any other
    sender as it is. Raises LookupError for an unknown model."""
    if isinstance(sender, str):
        return apps.get_model(sender)
    return sender
