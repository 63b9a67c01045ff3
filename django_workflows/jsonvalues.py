"""JSON values: what inputs, outputs, results and payloads must be, checked before any write.

Every value the engine stores goes through `to_json`, so a value the database would refuse
mid-transaction (or keep half-written) is refused first, with an error naming it:

- not JSON (a set, an object, NaN): TypeError;
- a lone surrogate ("\\ud800") in a string or key: ValueError on every database (it has no
  UTF-8 form: PostgreSQL and MariaDB refuse it, and a text column cannot be sent at all);
- a NUL character ("\\x00") on PostgreSQL, whose jsonb and text columns refuse it (SQLite and
  MariaDB store it);
- lists and dicts nested more than MAX_DEPTH deep (MariaDB's JSON CHECK refuses a document
  nested 32 deep, Python's json a thousand);
- more JSON than the database takes in one value (MariaDB: its max_allowed_packet).

The store writes JSON as UTF-8 text as it is (Utf8Encoder): an "é" takes the two bytes of its
UTF-8, not the six of "\\u00e9" (quotes, backslashes and control characters, NUL included, are
escaped as JSON escapes them).
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 20
"""How deep lists and dicts may nest in a stored value. MariaDB refuses a JSON document nested
32 deep; the engine keeps a value inside documents of its own (a journal entry, a child's end),
at most a few levels deeper, so 20 holds on every database."""


_SCALARS = {int, float, bool, type(None)}


class UnstorableValueError(ValueError):
    """A JSON value that no write could store: retrying what made it cannot help."""


def to_json(value: Any, what: str, *, nul: bool = False) -> Any:
    """`value` in its JSON form (a tuple becomes a list), checked to be storable anywhere: the
    store's `values.to_json` adds what a given database takes.

    Raises TypeError naming `what` if it is not JSON, UnstorableValueError (a ValueError)
    naming it and where in it the problem is for a lone surrogate (with `nul`, a NUL too) or
    nesting deeper than MAX_DEPTH.
    """
    check_value(value, what, nul=nul)
    return json.loads(dumps(value, what))


def check_value(value: Any, what: str, *, nul: bool = False) -> None:
    """Refuse a lone surrogate (and with `nul`, a NUL character) in any string or key of
    `value`, and lists and dicts nested deeper than MAX_DEPTH, with UnstorableValueError naming
    `what` and the place. Iterative: a value nested 100,000 deep is refused, not a RecursionError."""
    if isinstance(value, str):
        _check_text(value, what, None, nul)
    if not isinstance(value, dict | list | tuple):
        return
    stack: list[tuple[Any, int, Any]] = [(value, 0, None)]
    while stack:
        item, depth, path = stack.pop()
        if depth >= MAX_DEPTH:
            raise UnstorableValueError(
                f"{what} nests lists and dicts more than {MAX_DEPTH} deep (at "
                f"{_where(path)}), which not every database can store."
            )
        if isinstance(item, dict):
            pairs: Any = item.items()
            for key in item:
                if isinstance(key, str) and (not key.isascii() or (nul and "\x00" in key)):
                    _check_text(key, what, (path, key, True), nul)
        elif set(map(type, item)) <= _SCALARS:  # numbers only, looked at in C
            continue
        else:
            pairs = enumerate(item)
        for key, child in pairs:
            # Only the strings that may hold a surrogate (or a NUL) are looked at closely, and
            # only containers are kept for later: a long list of numbers costs one pass.
            if isinstance(child, str):
                if not child.isascii() or (nul and "\x00" in child):
                    _check_text(child, what, (path, key, False), nul)
            elif isinstance(child, dict | list | tuple):
                stack.append((child, depth + 1, (path, key, False)))


def check_text(what: str, value: str) -> None:
    """Refuse a NUL character (PostgreSQL cannot store it) or a lone surrogate (no database
    can) in text stored as it is (an id, a name, a key, a reason), with UnstorableValueError
    naming `what`."""
    if "\x00" in value:
        raise UnstorableValueError(f"{what} contains a NUL character.")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            raise UnstorableValueError(
                f"{what} contains a lone surrogate ({value[error.start]!r}), which has no UTF-8 "
                f"form: no database can store it."
            ) from None


def check_lookup(what: str, value: Any) -> None:
    """Refuse (UnstorableValueError) a NUL or a lone surrogate in an id, name or key that a call
    looks up: no row holds one, and PostgreSQL refuses it in the query itself. A value that is
    not a string is left to the call."""
    if isinstance(value, str):
        check_text(what, value)


MAX_MESSAGE = 65_536
"""The most characters of an error message or a cancel reason the engine stores."""


def storable_text(text: str) -> str:
    """`text` with what no database can store made visible instead: a lone surrogate as its
    backslash escape ("\\ud800"), a NUL as "\\x00"; cut to MAX_MESSAGE characters. For the
    messages the engine records."""
    if len(text) > MAX_MESSAGE:
        text = f"{text[:MAX_MESSAGE]}... ({len(text) - MAX_MESSAGE} more characters)"
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    if not text.isascii():
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


class Utf8Encoder(json.JSONEncoder):
    """The JSON encoder of the store's JSON columns: non-ASCII characters as they are, whatever
    `ensure_ascii` the caller passes (json.dumps() passes True)."""

    def __init__(self, **options: Any) -> None:
        options["ensure_ascii"] = False
        super().__init__(**options)


def text(value: Any) -> str:
    """`value` as the JSON text the store writes: non-ASCII characters as they are."""
    return json.dumps(value, ensure_ascii=False)


def dumps(value: Any, what: str) -> str:
    """`value` as JSON text, as the database driver sends it (non-ASCII characters as they
    are); TypeError if it is not JSON."""
    try:
        return json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"{what} must be a JSON value (dict, list, str, int, float, bool or None): "
            f"{_not_json(value) or error}."
        ) from None


def _not_json(value: Any) -> str | None:
    """Where in `value` the first thing that is not JSON sits, what it is, and for a model
    instance what to pass instead; None when it cannot be found (a NaN is the error's own)."""
    stack: list[tuple[Any, Any]] = [(value, None)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                if not isinstance(key, str | int | float | bool) and key is not None:
                    return f"a key of {_where(path)} is a {type(key).__name__}, not a string"
                stack.append((child, (path, key, False)))
        elif isinstance(item, list | tuple):
            stack.extend(
                (child, (path, index, False)) for index, child in reversed(list(enumerate(item)))
            )
        elif not isinstance(item, str | int | float | bool) and item is not None:
            meta = getattr(item, "_meta", None)
            if meta is not None and hasattr(item, "pk"):  # a Django model instance
                name = meta.model_name
                return (
                    f"{_where(path)} is a model instance ({meta.label}); pass its primary key "
                    f"({name}.pk), or the fields the workflow needs, and load the object in a "
                    f"step"
                )
            return f"{_where(path)} is a {type(item).__name__}"
    return None


def size(value: Any) -> int:
    """The size of `value` as JSON, in bytes of UTF-8 (a "é" is two, not the six of "\\u00e9")."""
    return len(json.dumps(value, separators=(",", ":"), default=str, ensure_ascii=False).encode())


def _check_text(text: str, what: str, path: Any, nul: bool) -> None:
    if nul and "\x00" in text:
        raise UnstorableValueError(
            f"{what} contains a NUL character (\\u0000) {_in(path)}, which PostgreSQL cannot store."
        )
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise UnstorableValueError(
                f"{what} contains a lone surrogate ({text[error.start]!r}) {_in(path)}, which "
                f"has no UTF-8 form: no database can store it."
            ) from None


def _in(path: Any) -> str:
    if path is not None and path[2]:
        return f"in the key {path[1][:40]!r} of {_where(path[0])}"
    return f"in {_where(path)}"


def _where(path: Any) -> str:
    """The place `path` (a linked list of (parent, key, is_key)) names: `value["a"][0]`."""
    parts = []
    while path is not None:
        parent, key, _ = path
        parts.append(
            f"[{key[:40]!r}...]" if isinstance(key, str) and len(key) > 40 else f"[{key!r}]"
        )
        path = parent
    return "the value" if not parts else "value" + "".join(reversed(parts))
