"""`runworkflows --metrics-port PORT`: this process's counters (counters.Metrics) served over
HTTP in Prometheus' text format at /metrics, by prometheus_client's own server thread."""

from __future__ import annotations

import ipaddress
from typing import Any

from ..conf import get_settings
from .counters import INSTALL, client, installed, metrics


def refusal() -> str | None:
    """Why the worker cannot serve its metrics (with the fix), or None when it can."""
    if not get_settings().metrics:
        return (
            "--metrics-port serves the worker's counters, which it keeps only while "
            "DJANGO_WORKFLOWS['METRICS'] is True: set it in the settings, or leave out "
            "--metrics-port."
        )
    if not installed():
        return (
            "--metrics-port needs the prometheus_client package, which is not installed: "
            f"install the extra `prometheus` ({INSTALL})."
        )
    return None


def check_port(port: Any) -> int:
    """`port` as a TCP port number (1 to 65535); ValueError naming the option otherwise."""
    try:
        number = int(port)
    except (TypeError, ValueError):
        number = -1
    if not 1 <= number <= 65535 or str(port).strip() != str(number):
        raise ValueError(f"--metrics-port must be a TCP port from 1 to 65535, not {port!r}.")
    return number


def check_address(address: str) -> str:
    """`address` as an IP address to listen on; ValueError naming the option otherwise."""
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        raise ValueError(
            f"--metrics-address must be an IP address to listen on, such as 0.0.0.0 (every "
            f"interface) or 127.0.0.1, not {address!r}."
        ) from None


def serve(port: int, address: str = "0.0.0.0") -> Any:
    """Serve this process's metrics on `address`:`port` from a daemon thread; the server.
    OSError (with what to change) when the port cannot be listened on."""
    try:
        server, _thread = client().start_http_server(
            port, addr=address, registry=metrics().registry
        )
    except OSError as error:
        raise OSError(
            f"Cannot serve the metrics on {address}:{port} ({error.strerror or error}): "
            f"choose a free --metrics-port."
        ) from error
    return server
