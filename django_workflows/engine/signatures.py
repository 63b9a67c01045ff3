"""Whether a function of workflow code can take the arguments the engine passes it, and if not,
what it takes instead, said from the function's side ("takes no argument"), not from the
call's as Python's own TypeError does ("too many positional arguments")."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def call_problem(fn: Callable[..., Any], count: int) -> str | None:
    """What keeps `fn` from being called with `count` positional arguments, or None when it
    can be (or when it has no signature to read, as some builtins: then let it run)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return signature_problem(signature, count)


def signature_problem(signature: inspect.Signature, count: int) -> str | None:
    """call_problem() of a signature already read."""
    try:
        signature.bind(*([None] * count))
    except TypeError:
        pass
    else:
        return None
    parameters = list(signature.parameters.values())
    positional = [p.name for p in parameters if p.kind in POSITIONAL]
    if len(positional) < count and not any(
        p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters
    ):
        if not positional:
            return "takes no argument"
        return f"takes only {_counted(len(positional))} ({', '.join(positional)})"
    required = [
        p.name
        for p in parameters
        if p.default is inspect.Parameter.empty
        and (
            p.kind is inspect.Parameter.KEYWORD_ONLY
            or (p.kind in POSITIONAL and positional.index(p.name) >= count)
        )
    ]
    return f"also requires {', '.join(required)}, which nothing passes"


def _counted(number: int) -> str:
    return f"{number} argument{'' if number == 1 else 's'}"
