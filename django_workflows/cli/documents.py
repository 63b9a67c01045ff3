"""The JSON the command line prints with `--json`: an instance as get_status() returns it (its
payloads decoded), its times in ISO 8601, and each operation's outcome."""

from __future__ import annotations

import dataclasses
import json
from datetime import date, datetime, timedelta
from typing import Any

from ..results import InstanceStatus


def instance_document(status: InstanceStatus) -> dict[str, Any]:
    """Every field of the InstanceStatus, its waits, journal entries and children as objects
    (`journal` and `children` null unless they were asked for)."""
    return dataclasses.asdict(status)


def dumps(value: Any) -> str:
    """`value` as indented JSON, datetimes in ISO 8601 (UTC, as the client gives them)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=_plain)


def inline(value: Any) -> str:
    """`value` as JSON on one line, for the human output's payloads."""
    return json.dumps(value, ensure_ascii=False, default=_plain)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
