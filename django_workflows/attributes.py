"""Tags and search attributes: what they may be, the form they are stored in, and the
conditions list_instances() takes on them. Pure checks, before any SQL: the store writes and
queries the rows (store/attributes.py).

An attribute is stored in the column of its type, so that each lookup is one indexed column
compared by the database: a string in `text`, a number (int, float; a bool as 0 or 1) in
`number`, an aware datetime in `moment`. Tags and attributes are stored plain, even with a codec:
they exist to be searched, and must not hold secrets.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .jsonvalues import check_text

# Column lengths, in characters (models.py sizes the columns with them).
TAG_LENGTH = 100
ATTRIBUTE_NAME_LENGTH = 100
ATTRIBUTE_TEXT_LENGTH = 255

MAX_TAGS = 20
"""The most tags an instance has (its workflow's static tags and its start's together)."""
MAX_ATTRIBUTES = 50
"""The most search attributes an instance has."""
MAX_EXACT_INT = 2**53
"""The largest integer (in magnitude) a float holds exactly: the `number` column is a float."""

LOOKUPS = ("exact", "gt", "gte", "lt", "lte", "in", "isnull")
"""The Django lookups an attribute condition takes (`"amount__gte"`); no suffix is `exact`."""
_ORDERED = ("gt", "gte", "lt", "lte")

# A Python identifier in ASCII without a double underscore, which separates a lookup.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Stored:
    """An attribute value in its row's form: its kind and the one column that holds it."""

    kind: str  # "str", "int", "float", "bool" or "datetime"
    text: str | None = None
    number: float | None = None
    moment: datetime | None = None

    def value(self) -> Any:
        """The value back in its Python type (a datetime aware, in UTC)."""
        return to_value(self.kind, self.text, self.number, self.moment)

    def journal_form(self) -> Any:
        """The value as JSON, for the journal entry of ctx.set_attributes()."""
        return self.moment.isoformat() if self.moment is not None else self.value()


@dataclass(frozen=True)
class Condition:
    """One condition of list_instances(attributes=...): the attribute `name` compared by
    `lookup` with `value`, in `column` ("text", "number", "moment"), on rows of `kinds`."""

    name: str
    lookup: str
    column: str
    kinds: tuple[str, ...]
    value: Any


def check_tags(tags: Any, what: str = "tags", *, static: Iterable[str] = ()) -> list[str]:
    """The tags `static` and `tags` together, each once, sorted. Raises TypeError naming
    `what` for tags that are not a list, tuple or set of strings (a lone string too),
    ValueError for an empty or over-long tag, one that no database stores, or more than
    MAX_TAGS in all."""
    if tags is None:
        tags = ()
    if isinstance(tags, str | bytes) or not isinstance(tags, list | tuple | set | frozenset):
        raise TypeError(f"{what} must be a list of strings, not {type(tags).__name__}.")
    merged = set(static)
    for tag in tags:
        if not isinstance(tag, str):
            raise TypeError(f"Each of {what} must be a string, not {type(tag).__name__}: {tag!r}.")
        if not tag:
            raise ValueError(f"{what} holds an empty string: a tag needs at least one character.")
        if len(tag) > TAG_LENGTH:
            raise ValueError(
                f"The tag {tag[:40]!r}... of {what} is {len(tag)} characters long; the most a "
                f"tag can be is {TAG_LENGTH}."
            )
        check_text(f"The tag {tag[:40]!r}", tag)
        merged.add(tag)
    if len(merged) > MAX_TAGS:
        raise ValueError(
            f"{what} make {len(merged)} tags (with the workflow's own); an instance has at most "
            f"{MAX_TAGS}."
        )
    return sorted(merged)


def check_name(name: Any, what: str) -> str:
    """Refuse an attribute name that is not a string (TypeError), or not identifier-like:
    ASCII letters, digits and single underscores, not starting with a digit, at most
    ATTRIBUTE_NAME_LENGTH characters (ValueError); both naming `what`."""
    if not isinstance(name, str):
        raise TypeError(f"{what}: an attribute name must be a string, not {type(name).__name__}.")
    if len(name) > ATTRIBUTE_NAME_LENGTH:
        raise ValueError(
            f"{what}: the attribute name {name[:40]!r}... is {len(name)} characters long; the "
            f"most it can be is {ATTRIBUTE_NAME_LENGTH}."
        )
    if not _NAME.fullmatch(name) or "__" in name:
        raise ValueError(
            f"{what}: the attribute name {name!r} must be identifier-like (ASCII letters, "
            f"digits and underscores, not starting with a digit, without a double underscore)."
        )
    return name


def stored(name: str, value: Any, what: str) -> Stored:
    """`value` of attribute `name` in its row's form. Raises TypeError naming `what` and the
    attribute for a value that is not a str, int, float, bool or datetime, ValueError for a
    naive datetime, NaN or an infinity, an int beyond ±2**53, or a string longer than
    ATTRIBUTE_TEXT_LENGTH or that no database stores."""
    where = f"{what}: attribute {name!r}"
    if isinstance(value, bool):
        return Stored("bool", number=1.0 if value else 0.0)
    if isinstance(value, int):
        return Stored("int", number=float(_exact_int(value, where)))
    if isinstance(value, float):
        return Stored("float", number=_finite(value, where))
    if isinstance(value, str):
        return Stored("str", text=_text(value, where))
    if isinstance(value, datetime):
        return Stored("datetime", moment=_aware(value, where))
    raise TypeError(
        f"{where} is a {type(value).__name__}; an attribute is a str, int, float, bool or an "
        f"aware datetime."
    )


def check_attributes(
    values: Any, what: str = "attributes", *, removable: bool = False
) -> dict[str, Stored | None]:
    """The attributes `values` (a dict of name to value) in their row's form; with `removable`,
    None stays None (remove the attribute). Raises TypeError for values that are not a dict,
    and as check_name() and stored() do; ValueError for more than MAX_ATTRIBUTES."""
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise TypeError(f"{what} must be a dict of names to values, not {type(values).__name__}.")
    if len(values) > MAX_ATTRIBUTES:
        raise ValueError(
            f"{what} holds {len(values)} attributes; an instance has at most {MAX_ATTRIBUTES}."
        )
    rows: dict[str, Stored | None] = {}
    for name, value in values.items():
        check_name(name, what)
        if value is None and removable:
            rows[name] = None
        elif value is None:
            raise TypeError(
                f"{what}: attribute {name!r} is None; leave it out, or remove it later with "
                f"ctx.set_attributes({name}=None)."
            )
        else:
            rows[name] = stored(name, value, what)
    return rows


def to_value(kind: str, text: str | None, number: float | None, moment: datetime | None) -> Any:
    """A row's value in its Python type (a datetime aware, in UTC)."""
    if kind == "str":
        return text
    if kind == "int":
        return None if number is None else int(number)
    if kind == "bool":
        return None if number is None else bool(number)
    if kind == "datetime":
        return None if moment is None else moment.astimezone(UTC)
    return number


def conditions(attributes: Any) -> list[Condition]:
    """The conditions of list_instances(attributes=...): keys `name` or `name__<lookup>` with
    LOOKUPS, values of the attribute's type (`in`: a list or tuple of them; `isnull`: a bool).
    An int and a float compare as numbers; a bool matches bools only.

    Raises TypeError for attributes that are not a dict, or a value of the wrong type for its
    lookup; ValueError for an unknown lookup or a bad name, or a value stored() refuses."""
    if not isinstance(attributes, Mapping):
        raise TypeError(
            f"attributes must be a dict of lookups to values, not {type(attributes).__name__}."
        )
    found = []
    for key, value in attributes.items():
        if not isinstance(key, str):
            raise TypeError(f"attributes: a key must be a string, not {type(key).__name__}.")
        name, _, lookup = key.rpartition("__") if "__" in key else (key, "", "exact")
        if lookup not in LOOKUPS:
            raise ValueError(
                f"attributes: {key!r} has the lookup {lookup!r}; use one of {', '.join(LOOKUPS)}."
            )
        check_name(name, "attributes")
        found.append(_condition(key, name, lookup, value))
    return found


def _condition(key: str, name: str, lookup: str, value: Any) -> Condition:
    if lookup == "isnull":
        if not isinstance(value, bool):
            raise TypeError(f"attributes: {key!r} takes True or False, not {value!r}.")
        return Condition(name, lookup, "", (), value)
    if lookup == "in":
        if not isinstance(value, list | tuple | set | frozenset):
            raise TypeError(f"attributes: {key!r} takes a list of values, not {value!r}.")
        rows = [stored(name, item, "attributes") for item in value]
        types = {_type(row) for row in rows}
        if len(types) > 1:
            raise TypeError(
                f"attributes: {key!r} mixes values of several types ({', '.join(sorted(types))});"
                f" give values of one type (ints and floats together are numbers)."
            )
        if not rows:  # matches nothing, as Django's `in` with an empty list
            return Condition(name, lookup, "text", (), [])
        return Condition(name, lookup, _column(rows[0]), _kinds(rows[0]), [_cell(r) for r in rows])
    if value is None:
        raise TypeError(f"attributes: {key!r} cannot compare with None; use {name}__isnull.")
    row = stored(name, value, "attributes")
    if lookup in _ORDERED and row.kind == "bool":
        raise TypeError(f"attributes: {key!r} orders a bool; compare a bool with exact only.")
    return Condition(name, lookup, _column(row), _kinds(row), _cell(row))


def _type(row: Stored) -> str:
    """What a value compares as: "str", "number" (an int or a float), "bool" or "datetime"."""
    return "number" if row.kind in ("int", "float") else row.kind


def _column(row: Stored) -> str:
    return {"str": "text", "datetime": "moment"}.get(row.kind, "number")


def _kinds(row: Stored) -> tuple[str, ...]:
    # Only numbers need the kind in the condition: their column holds bools as 0 and 1 too.
    if row.kind in ("int", "float"):
        return ("int", "float")
    return ("bool",) if row.kind == "bool" else ()


def _cell(row: Stored) -> Any:
    return row.text if row.kind == "str" else row.moment if row.kind == "datetime" else row.number


def _exact_int(value: int, where: str) -> int:
    if abs(value) > MAX_EXACT_INT:
        raise ValueError(
            f"{where} is {value}, beyond ±2**53: the number column (a float) cannot hold it "
            f"exactly. Store it as a string."
        )
    return value


def _finite(value: float, where: str) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{where} is {value}; a float attribute must be finite.")
    return value


def _text(value: str, where: str) -> str:
    if len(value) > ATTRIBUTE_TEXT_LENGTH:
        raise ValueError(
            f"{where} is {len(value)} characters long; the most a text attribute can be is "
            f"{ATTRIBUTE_TEXT_LENGTH}."
        )
    check_text(where, value)
    return value


def _aware(value: datetime, where: str) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{where} is a naive datetime; give an aware one (with a time zone).")
    return value.astimezone(UTC)
