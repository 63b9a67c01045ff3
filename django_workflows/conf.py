"""The DJANGO_WORKFLOWS setting as a typed object, read again whenever the setting changes."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from .durations import parse_duration

SETTING = "DJANGO_WORKFLOWS"
_KEYS = {
    "DATABASE",
    "WORKER",
    "RETRY",
    "JOURNAL",
    "CLOCK",
    "CODEC",
    "WEBHOOK",
    "STEP_MIDDLEWARE",
    "METRICS",
    "METRICS_TOKEN",
    "STREAMS",
}
_WORKER_KEYS = {
    "CONCURRENCY",
    "POLL_INTERVAL",
    "LEASE_DURATION",
    "HEARTBEAT_INTERVAL",
    "SHUTDOWN_TIMEOUT",
    "WAKEUP_INTERVAL",
}
_JOURNAL_KEYS = {"WARN_ENTRIES", "WARN_BYTES", "MAX_ENTRIES", "MAX_BYTES"}
_WEBHOOK_KEYS = {"BASE_URL", "MAX_BYTES"}
_STREAMS_KEYS = {"MAX_ITEMS", "MAX_BYTES"}


@dataclass(frozen=True)
class WorkerSettings:
    concurrency: int = 10
    poll_interval: timedelta = timedelta(seconds=1)
    lease_duration: timedelta = timedelta(seconds=30)
    heartbeat_interval: timedelta | None = None  # None: a third of the lease duration
    shutdown_timeout: timedelta = timedelta(seconds=10)
    # How often an idle worker looks at the wake-up counters (databases without NOTIFY);
    # None: never, it waits for its poll.
    wakeup_interval: timedelta | None = timedelta(milliseconds=50)


@dataclass(frozen=True)
class JournalLimits:
    warn_entries: float = 1000
    warn_bytes: float = 1_000_000
    max_entries: float = 10_000
    max_bytes: float = 10_000_000


@dataclass(frozen=True)
class WebhookSettings:
    base_url: str = ""  # "": webhook URLs are paths, relative to the site
    max_bytes: int = 1_000_000


@dataclass(frozen=True)
class StreamLimits:
    """The most one stream (an instance's items of one name) holds: items, and bytes of JSON."""

    max_items: int = 10_000
    max_bytes: int = 10_000_000


@dataclass(frozen=True)
class WorkflowSettings:
    database: str
    worker: WorkerSettings
    retry: Any
    journal: JournalLimits
    clock: Any
    codec: Any
    webhook: WebhookSettings = WebhookSettings()
    step_middleware: tuple[str, ...] = ()  # dotted paths, outermost first (middleware.py)
    metrics: bool = False  # the worker's counters (django_workflows.metrics)
    metrics_token: str = ""  # the bearer token of the metrics view; "": staff users only
    streams: StreamLimits = StreamLimits()


def _unknown(keys: Any, allowed: set[str], where: str) -> None:
    extra = sorted(set(keys) - allowed)
    if extra:
        raise ValueError(f"{where} has unknown keys: {', '.join(extra)}.")


MIN_POLL_INTERVAL = timedelta(milliseconds=10)


def check_poll_interval(value: timedelta, what: str) -> None:
    """Raise ValueError naming `what` for a poll interval under 10 ms: an idle worker would then
    claim (and query the schedules) hundreds of times a second."""
    if value < MIN_POLL_INTERVAL:
        raise ValueError(
            f"{what} ({value.total_seconds() * 1000:g}ms) must be at least 10ms: an idle worker "
            f"claims once per poll interval."
        )


@functools.cache
def get_settings() -> WorkflowSettings:
    """The DJANGO_WORKFLOWS setting, validated; raises ValueError naming a bad key or value."""
    raw = getattr(settings, SETTING, None) or {}
    _unknown(raw, _KEYS, SETTING)
    worker_raw = raw.get("WORKER") or {}
    _unknown(worker_raw, _WORKER_KEYS, f"{SETTING}['WORKER']")
    lease = parse_duration(worker_raw.get("LEASE_DURATION", "30s"), "WORKER['LEASE_DURATION']")
    heartbeat = worker_raw.get("HEARTBEAT_INTERVAL")
    concurrency = worker_raw.get("CONCURRENCY", 10)
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        raise ValueError(f"WORKER['CONCURRENCY'] must be a positive integer, not {concurrency!r}.")
    if heartbeat is not None and not (
        timedelta() < parse_duration(heartbeat, "WORKER['HEARTBEAT_INTERVAL']") < lease
    ):
        raise ValueError(
            f"WORKER['HEARTBEAT_INTERVAL'] ({heartbeat!r}) must be longer than zero and shorter "
            f"than WORKER['LEASE_DURATION'] ({lease}), which runs out unless renewed in time."
        )
    poll = parse_duration(worker_raw.get("POLL_INTERVAL", "1s"), "WORKER['POLL_INTERVAL']")
    check_poll_interval(poll, "WORKER['POLL_INTERVAL']")
    wakeup = worker_raw.get("WAKEUP_INTERVAL", "50ms")
    if wakeup is not None:
        wakeup = parse_duration(wakeup, "WORKER['WAKEUP_INTERVAL']")
        if wakeup < MIN_POLL_INTERVAL:
            raise ValueError(
                f"WORKER['WAKEUP_INTERVAL'] ({wakeup.total_seconds() * 1000:g}ms) must be at "
                f"least 10ms, or None to wait for the poll: an idle worker reads the wake-up "
                f"counters once per wake-up interval."
            )
    worker = WorkerSettings(
        concurrency=concurrency,
        poll_interval=poll,
        lease_duration=lease,
        heartbeat_interval=(
            None if heartbeat is None else parse_duration(heartbeat, "WORKER['HEARTBEAT_INTERVAL']")
        ),
        shutdown_timeout=parse_duration(
            worker_raw.get("SHUTDOWN_TIMEOUT", "10s"), "WORKER['SHUTDOWN_TIMEOUT']"
        ),
        wakeup_interval=wakeup,
    )
    journal_raw = raw.get("JOURNAL") or {}
    _unknown(journal_raw, _JOURNAL_KEYS, f"{SETTING}['JOURNAL']")
    journal = JournalLimits(
        **{key.lower(): float(value) for key, value in journal_raw.items()}  # inf turns a check off
    )
    return WorkflowSettings(
        database=raw.get("DATABASE", "default"),
        worker=worker,
        retry=raw.get("RETRY"),
        journal=journal,
        clock=raw.get("CLOCK"),
        codec=raw.get("CODEC"),
        webhook=_webhook(raw.get("WEBHOOK") or {}),
        step_middleware=_step_middleware(raw.get("STEP_MIDDLEWARE", ())),
        metrics=_metrics(raw.get("METRICS", False)),
        metrics_token=_metrics_token(raw.get("METRICS_TOKEN")),
        streams=_streams(raw.get("STREAMS") or {}),
    )


def _metrics(raw: Any) -> bool:
    """METRICS, True or False; TypeError otherwise."""
    if not isinstance(raw, bool):
        raise TypeError(f"{SETTING}['METRICS'] must be True or False, not {raw!r}.")
    return raw


def _metrics_token(raw: Any) -> str:
    """METRICS_TOKEN: None or "" (no token: staff users only), or a string; TypeError naming
    the key otherwise."""
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise TypeError(
            f"{SETTING}['METRICS_TOKEN'] must be a string (or None), not {type(raw).__name__}."
        )
    return raw


def _step_middleware(raw: Any) -> tuple[str, ...]:
    """STEP_MIDDLEWARE, a list or tuple of dotted paths; TypeError naming what is not."""
    if not isinstance(raw, list | tuple) or not all(isinstance(path, str) and path for path in raw):
        raise TypeError(
            f"{SETTING}['STEP_MIDDLEWARE'] must be a list of dotted paths to middleware "
            f"factories, not {raw!r}."
        )
    return tuple(raw)


def _webhook(raw: Any) -> WebhookSettings:
    """WEBHOOK, validated: BASE_URL an http(s) URL without query or fragment (its trailing
    slash dropped), MAX_BYTES a positive integer; ValueError or TypeError naming the key."""
    if not isinstance(raw, dict):
        raise TypeError(f"{SETTING}['WEBHOOK'] must be a dict, not {raw!r}.")
    _unknown(raw, _WEBHOOK_KEYS, f"{SETTING}['WEBHOOK']")
    base_url = raw.get("BASE_URL", "")
    if not isinstance(base_url, str):
        raise TypeError(f"WEBHOOK['BASE_URL'] must be a string, not {base_url!r}.")
    if base_url:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(
                f"WEBHOOK['BASE_URL'] must be an http:// or https:// URL with a host, such as "
                f"'https://shop.example.com', not {base_url!r}."
            )
        if parts.query or parts.fragment or base_url.endswith(("?", "#")):
            raise ValueError(
                f"WEBHOOK['BASE_URL'] must have no query or fragment (the webhook's path "
                f"follows it), not {base_url!r}."
            )
    max_bytes = raw.get("MAX_BYTES", 1_000_000)
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 1:
        raise ValueError(f"WEBHOOK['MAX_BYTES'] must be a positive integer, not {max_bytes!r}.")
    return WebhookSettings(base_url=base_url.rstrip("/"), max_bytes=max_bytes)


def _streams(raw: Any) -> StreamLimits:
    """STREAMS, validated: MAX_ITEMS and MAX_BYTES positive integers; TypeError or ValueError
    naming the key."""
    if not isinstance(raw, dict):
        raise TypeError(f"{SETTING}['STREAMS'] must be a dict, not {raw!r}.")
    _unknown(raw, _STREAMS_KEYS, f"{SETTING}['STREAMS']")
    limits = StreamLimits()
    values = {}
    for key in sorted(_STREAMS_KEYS):
        value = raw.get(key, getattr(limits, key.lower()))
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"STREAMS['{key}'] must be a positive integer, not {value!r}.")
        values[key.lower()] = value
    return StreamLimits(**values)


def database_alias(using: str | None = None) -> str:
    """The alias whose tables hold the workflows: `using`, or the DATABASE setting."""
    return using or get_settings().database


@receiver(setting_changed)
def _reload(*, setting: str, **kwargs: Any) -> None:
    # Modules that cache something read from the setting (clock, retries, codecs) clear their
    # own cache on this same signal: this module imports none of them.
    if setting == SETTING:
        get_settings.cache_clear()
