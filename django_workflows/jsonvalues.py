"""JSON values: what inputs, outputs, results and payloads must be, checked before any write."""

from __future__ import annotations

import json
from typing import Any

from django.db import connections


def to_json(value: Any, what: str, *, using: str | None = None) -> Any:
    """`value` in its JSON form (a tuple becomes a list); TypeError naming `what` if it is not JSON.

    On PostgreSQL, whose jsonb rejects it, a NUL character in a string is refused too.
    """
    text = dumps(value, what)
    if "\\u0000" in text and using is not None and connections[using].vendor == "postgresql":
        raise ValueError(
            f"{what} contains a NUL character (\\u0000) in a string, which PostgreSQL's jsonb "
            f"cannot store."
        )
    return json.loads(text)


def dumps(value: Any, what: str) -> str:
    try:
        return json.dumps(value, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"{what} must be a JSON value (dict, list, str, int, float, bool or None): {error}."
        )


def size(value: Any) -> int:
    """The size of `value` as JSON, in bytes of UTF-8 (a "é" is two, not the six of "\\u00e9")."""
    return len(json.dumps(value, separators=(",", ":"), default=str, ensure_ascii=False).encode())
