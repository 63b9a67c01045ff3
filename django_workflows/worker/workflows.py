"""What a worker serves, read from the registry: the workflows whose schedules it starts and the
limits its claims apply."""

from __future__ import annotations

from ..durations import parse_duration
from ..engine.registry import registry
from ..store import limits


def scheduled_workflows(names: list[str] | None, queues: list[str] | None) -> list[str]:
    """The workflows whose schedules a worker starts: those it runs, and with `queues`, only
    those with a registered version whose queue is one of them (the occurrences of a schedule
    are started by a worker of the pool that runs them)."""
    pairs = registry.pairs(names)
    if queues is not None:
        pairs = [
            (name, version)
            for name, version in pairs
            if (definition := registry.get(name, version)) is not None
            and definition.queue in queues
        ]
    return sorted({name for name, _ in pairs})


def limit_rules(
    names: list[str] | None,
) -> tuple[dict[str, limits.ConcurrencyRule], dict[str, limits.RateRule]]:
    """The concurrency and rate limits a claim applies, by workflow name: those of the highest
    registered version, for all its versions."""
    concurrency: dict[str, limits.ConcurrencyRule] = {}
    rates: dict[str, limits.RateRule] = {}
    for name in sorted({name for name, _ in registry.pairs(names)}):
        definition = registry.latest(name)
        if definition is None:
            continue
        if definition.concurrency:
            concurrency[name] = limits.ConcurrencyRule(
                limit=next((c.limit for c in definition.concurrency if c.key is None), None),
                per_key=next((c.limit for c in definition.concurrency if c.key is not None), None),
            )
        if definition.rate_limit:
            windows = {
                r.key is not None: limits.Window(r.max, parse_duration(r.duration, "duration"))
                for r in definition.rate_limit
            }
            rates[name] = limits.RateRule(limit=windows.get(False), per_key=windows.get(True))
    return concurrency, rates
