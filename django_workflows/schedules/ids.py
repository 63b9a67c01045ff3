"""Occurrence ids: an occurrence's instance id is `<schedule id>@<UTC time, ms, Z>`, an id only
the occurrence may take.

A leaf: it imports nothing of the package, as the client imports it (to refuse such ids in
`start()`) and the schedules API imports the client.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

# What occurrence_id() gives for any schedule id (letters, digits, ".", ":", "_", "-") and time.
_OCCURRENCE_ID = re.compile(
    r"[A-Za-z0-9.:_-]+@[0-9]{1,4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z"
)


def occurrence_id(schedule_id: str, at: datetime) -> str:
    """The id of the schedule's occurrence at `at`: "<schedule id>@<UTC time, ms, Z>". Raises
    ValueError when `at` is naive."""
    if not isinstance(at, datetime) or at.tzinfo is None or at.utcoffset() is None:
        raise ValueError(f"at must be a timezone-aware datetime, not {at!r}.")
    at = at.astimezone(UTC)
    return f"{schedule_id}@{at:%Y-%m-%dT%H:%M:%S}.{at.microsecond // 1000:03d}Z"


def is_occurrence_id(id: str) -> bool:
    """Whether `id` has the form of a schedule occurrence's instance id, which only the
    occurrence may take."""
    return _OCCURRENCE_ID.fullmatch(id) is not None
