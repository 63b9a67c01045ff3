"""A failed attempt's traceback, as journaled with its error: formatted, its tail kept within
MAX_TRACEBACK, and where it was raised (the innermost frame), for the worker's log line."""

from __future__ import annotations

import traceback
from pathlib import Path
from types import TracebackType
from typing import Any

from ..jsonvalues import storable_text
from . import journal

MAX_TRACEBACK = 16 * 1024  # bytes of UTF-8; the tail is kept, since it names the raising line
CUT = "[... the traceback's first {count} bytes were cut ...]\n"
ENGINE = str(Path(__file__).resolve().parent)


def format_traceback(error: BaseException) -> str:
    """`error` formatted as Python prints it, from the first frame outside the engine (whose
    own frames, the attempt's calls, say nothing of the step), at most MAX_TRACEBACK bytes:
    past that, its end (the innermost frames and the error) behind a line saying how much
    was cut."""
    formatted = traceback.TracebackException(type(error), error, _outside_engine(error))
    text = storable_text("".join(formatted.format()))
    data = text.encode()
    if len(data) <= MAX_TRACEBACK:
        return text
    room = MAX_TRACEBACK - len(CUT.format(count=len(data)).encode())
    tail = data[-room:].decode(errors="ignore")
    return CUT.format(count=len(data) - len(tail.encode())) + tail


def _outside_engine(error: BaseException) -> TracebackType | None:
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        if not str(Path(tb.tb_frame.f_code.co_filename).resolve()).startswith(ENGINE):
            break
        tb = tb.tb_next
    return tb


def raised_at(error: BaseException) -> str:
    """Where `error` was raised: `path:lineno in function` of its innermost frame, or
    "unknown" for an error without a traceback."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return "unknown"
    frame = frames[-1]
    return f"{frame.filename}:{frame.lineno} in {frame.name}"


def attempt_error(error: BaseException) -> dict[str, Any]:
    """The error a failed attempt journals: journal.serialize_error() and its traceback."""
    return {**journal.serialize_error(error), "traceback": format_traceback(error)}
