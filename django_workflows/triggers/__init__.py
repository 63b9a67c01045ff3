"""Django signals that start and signal workflows: `start_on` and `signal_on`, stacked on
`@workflow`, and the receivers the app connects when the registry is ready.

A client-level room: its receivers call `start()` and `signal()`; the engine never imports it.
"""

from __future__ import annotations

from .decorators import signal_on, start_on
from .receivers import connect_receivers

__all__ = ["connect_receivers", "signal_on", "start_on"]
