"""Why a step failed and what it logged, as the instance page shows them under the entry: the
error's traceback collapsed in a <details>, and the lines of step.log of its attempts."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from ..engine.steplog import MAX_ATTEMPTS


def traceback_block(traceback: Any, summary: str = "Traceback") -> SafeString:
    """An error's formatted traceback, collapsed; nothing for an error without one."""
    if not isinstance(traceback, str) or not traceback:
        return mark_safe("")  # noqa: S308 - empty
    return format_html(
        '<details class="dw-traceback"><summary>{}</summary><pre>{}</pre></details>',
        summary,
        traceback,
    )


def without_tracebacks(error: Any) -> Any:
    """The error with its tracebacks (its own, its compensation's) left out: they show
    apart, as text, not as one JSON string."""
    if not isinstance(error, dict):
        return error
    kept = {key: value for key, value in error.items() if key != "traceback"}
    if isinstance(kept.get("compensation"), dict):
        kept["compensation"] = without_tracebacks(kept["compensation"])
    return kept


def error_tracebacks(error: Any) -> SafeString:
    """The tracebacks an instance's error holds (its failed step's, its compensation's)."""
    if not isinstance(error, dict):
        return mark_safe("")  # noqa: S308 - empty
    compensation = error.get("compensation")
    return format_html(
        "{}{}",
        traceback_block(error.get("traceback")),
        traceback_block(
            compensation.get("traceback") if isinstance(compensation, dict) else None,
            "Traceback of the compensation",
        ),
    )


def log_lines(doc: dict[str, Any]) -> SafeString:
    """The step.log lines a journal entry keeps, grouped by attempt, oldest first: those of the
    attempts before its latest (`earlier_logs`, a note of how many more attempts' lines were
    not kept), then its latest's; each with a note of how many of its lines were not kept."""
    earlier = doc.get("earlier_logs")
    groups = (
        [group for group in earlier if isinstance(group, dict)] if isinstance(earlier, list) else []
    )
    omitted = doc.get("earlier_logs_omitted") or 0
    note = (
        format_html(
            '<p class="dw-logs-omitted">The lines of {} earlier attempt{} were not kept (an entry '
            "keeps those of its last {} attempts).</p>",
            omitted,
            "s"[: omitted != 1],
            MAX_ATTEMPTS,
        )
        if omitted
        else ""
    )
    return format_html(
        "{}{}{}",
        note,
        format_html_join("", "{}", ((_attempt_lines(group),) for group in groups)),
        _attempt_lines(doc),
    )


def _attempt_lines(doc: dict[str, Any]) -> SafeString:
    """One attempt's lines (`doc`: its `attempt`, `logs` and `logs_dropped`), open in a
    <details>, with a note of how many were not kept; nothing when it logged none."""
    logs = doc.get("logs")
    logs = [line for line in logs if isinstance(line, dict)] if isinstance(logs, list) else []
    dropped = doc.get("logs_dropped") or 0
    if not logs and not dropped:
        return mark_safe("")  # noqa: S308 - empty
    lines = format_html_join(
        "",
        '<li class="dw-log-{}"><time>{}</time> <span class="dw-log-level">{}</span> {}</li>',
        (
            (
                str(line.get("level", "")).lower(),
                _clock_time(line.get("at")),
                line.get("level", ""),
                line.get("message", ""),
            )
            for line in logs
        ),
    )
    more = (
        format_html(
            '<li class="dw-log-dropped">{} more line{} not kept</li>', dropped, "s"[: dropped != 1]
        )
        if dropped
        else ""
    )
    attempt = doc.get("attempt")
    return format_html(
        '<details class="dw-logs" open><summary>Log{}: {} line{}</summary><ol>{}{}</ol></details>',
        f" of attempt {attempt}" if attempt else "",
        len(logs),
        "s"[: len(logs) != 1],
        lines,
        more,
    )


def _clock_time(at: Any) -> str:
    """A line's time of day, to the millisecond (its date is the step's, shown above)."""
    try:
        return datetime.fromisoformat(at).strftime("%H:%M:%S.%f")[:-3]
    except (TypeError, ValueError):
        return str(at or "")


def entry_details(doc: dict[str, Any]) -> SafeString:
    """What shows under a journal entry: its error and traceback, then its log lines."""
    error = doc.get("error")
    failure = (
        format_html(
            '<p class="dw-error-line"><strong class="dw-error-name">{}</strong>: {}</p>{}',
            error.get("name", ""),
            error.get("message", ""),
            traceback_block(error.get("traceback")),
        )
        if isinstance(error, dict)
        else ""
    )
    return format_html("{}{}", failure, log_lines(doc))
