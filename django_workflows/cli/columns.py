"""Aligned columns, as `git` and `kubectl` print them, fitted to the terminal's width: the
columns that may be shortened lose their ends (with an ellipsis) until the table fits. Piped,
they are not cut."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

GAP = "  "
ELLIPSIS = "…"


@dataclass(frozen=True)
class Column:
    """A column's header, and how short it may become to fit (None: never shortened)."""

    header: str
    shortest: int | None = None


def terminal_width() -> int:
    """The width to fit the output to: `COLUMNS` when set, else the terminal's; no limit when the
    output goes to a pipe or a file (a script or `grep` reads the whole of each line)."""
    if "COLUMNS" not in os.environ and not sys.stdout.isatty():
        return sys.maxsize
    return shutil.get_terminal_size((80, 24)).columns


def table(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int) -> list[str]:
    """The header and the rows as lines of aligned columns no wider than `width` where the
    shortenable columns allow it (the last shortenable one is shortened first); a cell's line
    breaks and tabs become spaces; no trailing spaces."""
    rows = [[_one_line(cell) for cell in row] for row in rows]
    widths = [
        max([len(column.header), *(len(row[i]) for row in rows)])
        for i, column in enumerate(columns)
    ]
    excess = sum(widths) + len(GAP) * (len(columns) - 1) - width
    for i in reversed(range(len(columns))):
        shortest = columns[i].shortest
        if excess <= 0:
            break
        if shortest is None:
            continue
        shortest = max(shortest, len(columns[i].header))
        cut = min(excess, widths[i] - shortest)
        if cut > 0:
            widths[i] -= cut
            excess -= cut
    lines = []
    for cells in [[column.header for column in columns], *rows]:
        fitted = [clip(cell, widths[i]).ljust(widths[i]) for i, cell in enumerate(cells)]
        lines.append(GAP.join(fitted).rstrip())
    return lines


def _one_line(text: str) -> str:
    # A message with line breaks would break the table's rows apart.
    return text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ").replace("\t", " ")


def clip(text: str, width: int) -> str:
    """`text`, cut to `width` characters with an ellipsis at the end when it is longer."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + ELLIPSIS


def when(value: datetime | None) -> str:
    """A time as the human output shows it: to the second, in UTC; "-" for none."""
    if value is None:
        return "-"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def span(value: timedelta) -> str:
    """A duration as the human output shows it: "850ms", "12s", "5m", "3h", "2d" (rounded
    down; a negative one, from a clock set back, is "0s")."""
    seconds = value.total_seconds()
    if seconds < 1:
        return f"{max(int(seconds * 1000), 0)}ms" if seconds > 0 else "0s"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"
