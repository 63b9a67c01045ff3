"""The custom status (ctx.set_status()): checked when set, written with the next write."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..jsonvalues import size

if TYPE_CHECKING:
    from .runtime import Runtime

CUSTOM_STATUS_LIMIT = 16 * 1024
_UNSET: Any = object()


class CustomStatus:
    """The instance's custom status as written, and the one set since, if any."""

    __slots__ = ("desired", "written")

    def __init__(self, written: Any):
        self.written = written
        self.desired: Any = _UNSET

    def unwritten(self) -> bool:
        """Whether a status was set that differs from the one written."""
        return self.desired is not _UNSET and self.desired != self.written


def set_status(x: Runtime, value: Any) -> None:
    """Set the custom status of `x`'s instance to `value` (JSON, at most 16 KiB); raises
    TypeError for a value that is not JSON or is larger."""
    value = x.to_json(value, "The custom status")
    if size(value) > CUSTOM_STATUS_LIMIT:
        raise TypeError("The custom status takes more than 16 KiB as JSON.")
    x._guard_step("ctx.set_status()")
    with x._lock:
        x.status.desired = value
