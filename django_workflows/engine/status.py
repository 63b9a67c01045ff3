"""The custom status (ctx.set_status()): checked when set, written with the next write
(x.lease.write() adds it to the write when it differs from the one written)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..jsonvalues import size

if TYPE_CHECKING:
    from .surface import Surface

CUSTOM_STATUS_LIMIT = 16 * 1024


def set_status(x: Surface, value: Any) -> None:
    """Set the custom status of `x`'s instance to `value` (JSON, at most 16 KiB); raises
    TypeError for a value that is not JSON or is larger."""
    value = x.lease.to_json(value, "The custom status")
    if size(value) > CUSTOM_STATUS_LIMIT:
        raise TypeError("The custom status takes more than 16 KiB as JSON.")
    x.guards.guard_step("ctx.set_status()")
    with x.lock:
        x.lease.desired_status = value
