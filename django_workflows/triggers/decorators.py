"""`start_on` and `signal_on`: the decorators, stacked on `@workflow` in either order, that check
their arguments at decoration and keep the declaration (mappings.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.apps import apps
from django.db.models import Model
from django.db.models.signals import ModelSignal
from django.dispatch import Signal

from ..definitions import Workflow, WorkflowSignal, check_debounce, check_priority
from ..durations import Duration
from ..jsonvalues import to_json
from .mappings import Argument, SignalOn, StartOn, attach, sender_label, signal_label
from .receivers import connect

Decorated = Any  # a Workflow, or the function or class @workflow is about to decorate


def _check_signal(what: str, signal: Any) -> None:
    if not isinstance(signal, Signal):
        raise TypeError(
            f"{what} takes a django.dispatch.Signal (post_save, or a Signal() of your own), "
            f"not {signal!r}."
        )


def _check_sender(what: str, signal: Signal, sender: Any) -> None:
    """A model signal's sender is a model class or its "app_label.ModelName", as Django takes it;
    any other signal's is any object."""
    if sender is None or not isinstance(signal, ModelSignal):
        return
    if isinstance(sender, str):
        if sender.count(".") != 1 or not all(sender.split(".")):
            raise ValueError(
                f'{what}: a model signal\'s sender is a model class or "app_label.ModelName", '
                f"not {sender!r}."
            )
        return
    if not (isinstance(sender, type) and issubclass(sender, Model)):
        raise TypeError(
            f"{what}: {signal_label(signal)} is sent by model classes: sender must be a model "
            f'class or "app_label.ModelName", not {sender!r}.'
        )
    if sender._meta.abstract:
        raise ValueError(
            f"{what}: {sender_label(sender)} is abstract and never sends {signal_label(signal)}: "
            f"give the concrete model."
        )


def _check_when(what: str, when: Any) -> Argument | None:
    if when is None:
        return None
    if not callable(when) and not isinstance(when, bool):
        raise TypeError(f"{what}: when must be a bool or a function, not {when!r}.")
    return Argument("when", when)


def _check_text(what: str, name: str, value: Any, *, required: bool = False) -> Argument:
    if value is None and required:
        raise TypeError(
            f"{what} needs an {name}: a string, or a function of the signal's keyword arguments "
            f"that derives it from the business key (id=lambda instance, **kw: "
            f'f"order-{{instance.pk}}").'
        )
    if value is not None and not callable(value) and not isinstance(value, str):
        raise TypeError(f"{what}: {name} must be a string or a function, not {value!r}.")
    if isinstance(value, str) and not value:
        raise ValueError(f"{what}: {name} must not be empty.")
    return Argument(name, value)


def _check_json(what: str, name: str, value: Any) -> Argument:
    if not callable(value):
        to_json(value, f"{what}: the {name}")
    return Argument(name, value)


def _start_options(what: str, given: dict[str, Any]) -> tuple[Argument, ...]:
    """start()'s keyword arguments that were given, each checked as a value or a function."""
    checks: dict[str, Callable[[Any], bool]] = {
        "priority": lambda value: isinstance(value, int),
        "concurrency_key": lambda value: isinstance(value, str),
        "rate_limit_key": lambda value: isinstance(value, str),
        "fair_key": lambda value: isinstance(value, str),
        "subject": lambda value: isinstance(value, Model),
        "tags": lambda value: (
            isinstance(value, list | tuple) and all(isinstance(tag, str) for tag in value)
        ),
        "attributes": lambda value: (
            isinstance(value, dict) and all(isinstance(name, str) for name in value)
        ),
        "debounce": lambda value: isinstance(value, str | int | float | timedelta),
        "debounce_timeout": lambda value: isinstance(value, str | int | float | timedelta),
    }
    expected = {
        "priority": "an integer",
        "concurrency_key": "a string",
        "rate_limit_key": "a string",
        "fair_key": "a string",
        "subject": "a model instance",
        "tags": "a list of strings",
        "attributes": "a dict with string keys",
        "debounce": "a duration",
        "debounce_timeout": "a duration",
    }
    options = []
    for name, value in given.items():
        if value is None:
            continue
        if not callable(value) and not checks[name](value):
            raise TypeError(
                f"{what}: {name} must be {expected[name]} or a function, not {value!r}."
            )
        if name == "priority" and not callable(value):
            try:
                check_priority(value)
            except ValueError as error:
                raise ValueError(f"{what}: {error}") from None
        options.append(Argument(name, value))
    return tuple(options)


def _keep(what: str, declaration: StartOn | SignalOn) -> Callable[[Decorated], Decorated]:
    def decorate(target: Decorated) -> Decorated:
        if not isinstance(target, Workflow) and not callable(target):
            raise TypeError(
                f"{what} decorates a @workflow (or its function or class), not {target!r}."
            )
        attach(target, declaration)
        if apps.ready:  # declared after startup (a test, a late import): connected now
            signal = (
                declaration.signal
                if isinstance(declaration, StartOn)
                else declaration.django_signal
            )
            try:
                connect(signal, declaration.sender)
            except LookupError:
                raise ValueError(
                    f"{what}: the sender {declaration.sender!r} names no installed model."
                ) from None
        return target

    return decorate


def start_on(
    signal: Signal,
    *,
    sender: Any = None,
    id: str | Callable[..., str],
    input: Any,
    when: bool | Callable[..., Any] | None = None,
    subject: Any = None,
    priority: int | Callable[..., int] | None = None,
    concurrency_key: str | Callable[..., str] | None = None,
    rate_limit_key: str | Callable[..., str] | None = None,
    fair_key: str | Callable[..., str] | None = None,
    tags: Any = None,
    attributes: Any = None,
    debounce: Duration | Callable[..., Duration] | None = None,
    debounce_timeout: Duration | Callable[..., Duration] | None = None,
) -> Callable[[Decorated], Decorated]:
    """Declare that a send of `signal` (by `sender`, if given) starts the workflow: `start()`
    with the id, input and options, each a value or a function of the signal's keyword
    arguments, in the transaction the signal is sent in. `when` false: nothing starts. With
    `debounce`, a storm of sends (a model saved fifty times) starts one instance of the id,
    with the last send's input, once the sends have stopped for `debounce`.

    Raises TypeError or ValueError naming the argument for a signal that is not a Django
    Signal, a sender a model signal cannot have, no `id`, or a value of the wrong type.
    """
    _check_signal("start_on", signal)
    what = f"start_on({signal_label(signal)})"
    _check_sender(what, signal, sender)
    options = _start_options(
        what,
        {
            "subject": subject,
            "priority": priority,
            "concurrency_key": concurrency_key,
            "rate_limit_key": rate_limit_key,
            "fair_key": fair_key,
            "tags": tags,
            "attributes": attributes,
            "debounce": debounce,
            "debounce_timeout": debounce_timeout,
        },
    )
    if not callable(debounce) and not callable(debounce_timeout):
        try:
            check_debounce(debounce, debounce_timeout)
        except ValueError as error:
            raise ValueError(f"{what}: {error}") from None
    declaration = StartOn(
        signal=signal,
        sender=sender,
        id=_check_text(what, "id", id, required=True),
        input=_check_json(what, "input", input),
        when=_check_when(what, when),
        options=options,
    )
    return _keep(what, declaration)


def signal_on(
    django_signal: Signal,
    *,
    signal: WorkflowSignal | str,
    sender: Any = None,
    key: str | Callable[..., str | None] | None = None,
    id: str | Callable[..., str | None] | None = None,
    payload: Any,
    when: bool | Callable[..., Any] | None = None,
) -> Callable[[Decorated], Decorated]:
    """Declare that a send of `django_signal` (by `sender`, if given) sends the workflow signal
    `signal`: `signal()` with the key, id and payload, each a value or a function of the signal's
    keyword arguments, in the transaction the Django signal is sent in. `when` false: nothing.

    Raises TypeError or ValueError naming the argument for a signal that is not a Django
    Signal, a sender a model signal cannot have, or a value of the wrong type.
    """
    _check_signal("signal_on", django_signal)
    name = signal.name if isinstance(signal, WorkflowSignal) else signal
    if not isinstance(name, str) or not name:
        raise TypeError(
            f"signal_on: signal must be a WorkflowSignal or a signal name, not {signal!r}."
        )
    if name.startswith("$"):
        raise ValueError(
            f"signal_on: signal names starting with '$' are the engine's own, not {name!r}."
        )
    what = f"signal_on({signal_label(django_signal)}, signal={name!r})"
    _check_sender(what, django_signal, sender)
    declaration = SignalOn(
        django_signal=django_signal,
        sender=sender,
        signal=name,
        key=_check_text(what, "key", key),
        id=_check_text(what, "id", id),
        payload=_check_json(what, "payload", payload),
        when=_check_when(what, when),
    )
    return _keep(what, declaration)
