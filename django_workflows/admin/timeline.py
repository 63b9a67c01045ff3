"""The journal as a timeline: every entry on one time axis, scaled to the instance's life."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .. import clock
from ..models import FINISHED, WorkflowInstance
from .display import STATUS_COLOURS, UNKNOWN_COLOUR, pretty_json, readable_name, status_badge
from .failures import entry_details, without_tracebacks


@dataclass(frozen=True)
class TimelineRow:
    """One journal entry: a bar from start to end, or a marker at `start` when it has no span."""

    name: str  # as a person reads it ("undo reserve-stock")
    entry: str  # as it is stored ("$compensate:reserve-stock")
    kind: str
    status: str
    attempt: int | None
    start: datetime | None
    end: datetime | None
    marker: bool
    left: float  # percent of the axis
    width: float  # percent of the axis; 0 for markers
    colour: str
    detail: str  # when it started and how long it took, beside the bar
    details: str = ""  # HTML under the row: its error, traceback and step.log lines

    @property
    def detail_place(self) -> tuple[str, str]:
        """Where the detail goes: after the bar, before it near the axis's end, or inside a long
        bar that fills the axis; as (CSS class, CSS position)."""
        end = self.left + self.width
        if end <= 70:
            return "dw-detail-after", f"left: {end:.3f}%"
        if self.left >= 30:
            return "dw-detail-before", f"right: {100 - self.left:.3f}%"
        return "dw-detail-inside", f"left: {self.left:.3f}%"


@dataclass(frozen=True)
class Timeline:
    start: datetime
    end: datetime
    rows: list[TimelineRow]
    ticks: list[tuple[float, str]]
    now: float | None  # percent of the axis where "now" is, for an unfinished instance
    legend: list[tuple[str, str]]  # (status, colour) of the statuses shown
    origin: str  # what the ticks count from: "times in UTC", or "from 12:00:03 UTC"

    @property
    def length(self) -> str:
        return _duration(self.end - self.start)


MIN_BAR_WIDTH = 0.6  # percent: an instant step still shows on an axis of days
TICKS = 6
RELATIVE_BELOW = timedelta(minutes=1)  # a shorter axis counts from its start: +120 ms, +1.2 s


def parse_time(value: Any) -> datetime | None:
    if not value or not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _open_end(doc: dict[str, Any]) -> datetime | None:
    """Where a pending entry's bar stops: its wake time, its retry time or its first deadline."""
    deadlines = [parse_time(v) for v in (doc.get("deadlines") or {}).values()]
    candidates = [parse_time(doc.get("wake_at")), parse_time(doc.get("retry_at")), *deadlines]
    known = [c for c in candidates if c is not None]
    return min(known) if known else None


def _duration(delta: timedelta) -> str:
    seconds = delta.total_seconds()
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _since_start(delta: timedelta) -> str:
    """A tick of a short axis: "+0 ms", "+120 ms", "+1.2 s", "+42 s"."""
    seconds = delta.total_seconds()
    if seconds < 1:
        return f"+{seconds * 1000:.0f} ms"
    return f"+{seconds:.1f} s" if seconds < 10 else f"+{seconds:.0f} s"


def _ticks(start: datetime, span: timedelta) -> tuple[list[tuple[float, str]], str]:
    """The axis's ticks, and what they count from. A run shorter than a minute would repeat
    one clock time at every tick: its ticks count from its start instead."""
    moments = [(round(i * 100 / (TICKS - 1), 3), span * i / (TICKS - 1)) for i in range(TICKS)]
    if span < RELATIVE_BELOW:
        origin = f"from {start.strftime('%H:%M:%S')} UTC"
        return [(left, _since_start(delta)) for left, delta in moments], origin
    fmt = "%H:%M:%S" if span < timedelta(days=1) else "%b %d %H:%M"
    return [(left, (start + delta).strftime(fmt)) for left, delta in moments], "times in UTC"


def build_timeline(
    instance: WorkflowInstance, entries: list[tuple[str, dict[str, Any]]]
) -> Timeline:
    """Place every journal entry on one time axis, from the instance's start to its last event."""
    now = clock.now()
    finished = instance.status in FINISHED
    spans: list[tuple[str, dict[str, Any], datetime | None, datetime | None, bool]] = []
    for name, doc in entries:
        started, ended = parse_time(doc.get("started_at")), parse_time(doc.get("finished_at"))
        if started is None:  # values, commits, retries: an instant
            spans.append((name, doc, ended, ended, True))
            continue
        if ended is None:
            ended = instance.updated_at if finished else (_open_end(doc) or now)
            ended = max(ended, started)
        spans.append((name, doc, started, ended, False))
    times = [t for _, _, s, e, _ in spans for t in (s, e) if t is not None]
    axis_start = min([instance.created_at, *times])
    axis_end = max([instance.updated_at, *times, *([] if finished else [now])])
    total = max((axis_end - axis_start).total_seconds(), 1.0)

    def percent(moment: datetime) -> float:
        return min(max((moment - axis_start).total_seconds() / total * 100, 0.0), 100.0)

    rows = []
    for name, doc, started, ended, marker in spans:
        status = str(doc.get("status", ""))
        left = percent(started) if started is not None else 0.0
        width = 0.0 if marker or ended is None else max(percent(ended) - left, MIN_BAR_WIDTH)
        left = min(left, 100.0 - width)
        when = "" if started is None else started.strftime("%Y-%m-%d %H:%M:%S")
        length = "" if marker or ended is None or started is None else _duration(ended - started)
        rows.append(
            TimelineRow(
                name=entry_label(name, doc),
                entry=name,
                kind=str(doc.get("kind", "step")),
                status=status,
                attempt=doc.get("attempt"),
                start=started,
                end=ended,
                marker=marker,
                left=round(left, 3),
                width=round(width, 3),
                colour=STATUS_COLOURS.get(status, UNKNOWN_COLOUR),
                detail=" · ".join(part for part in (when, length) if part),
                details=entry_details(doc),
            )
        )
    ticks, origin = _ticks(axis_start, axis_end - axis_start)
    return Timeline(
        start=axis_start,
        end=axis_end,
        rows=rows,
        ticks=ticks,
        now=None if finished else round(percent(now), 3),
        legend=[(s, c) for s, c in STATUS_COLOURS.items() if s in {r.status for r in rows}],
        origin=origin,
    )


def entry_label(name: str, doc: dict[str, Any]) -> str:
    """An entry's name as shown: a published value's (`$value:<position>`) says its name too,
    a patch marker's (`$patch:<id>`) the branch the run took, a compensation
    (`$compensate:<step>`) reads "undo <step>"."""
    if doc.get("kind") == "value" and isinstance(doc.get("name"), str):
        return f"{name} ({doc['name']})"
    if doc.get("kind") == "patch":
        return f"{name} ({'new' if doc.get('result') else 'old'} branch)"
    return readable_name(name)


def journal_row(name: str, doc: dict[str, Any]) -> dict[str, Any]:
    error = doc.get("error")
    return {
        "name": entry_label(name, doc),
        "kind": doc.get("kind", "step"),
        "status": doc.get("status", ""),
        "badge": status_badge(str(doc.get("status", ""))),
        "attempt": doc.get("attempt"),
        "started_at": parse_time(doc.get("started_at")),
        "finished_at": parse_time(doc.get("finished_at")),
        "error": error,
        "outcome": pretty_json(
            without_tracebacks(error) if error is not None else doc.get("result")
        ),
        "details": entry_details(doc),
    }
