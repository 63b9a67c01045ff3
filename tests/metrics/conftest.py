from __future__ import annotations

import pytest


@pytest.fixture
def metrics_on(settings):
    """DJANGO_WORKFLOWS["METRICS"] on for this test; the process's counters, to read."""
    from django_workflows.metrics.counters import metrics

    settings.DJANGO_WORKFLOWS = {
        **(getattr(settings, "DJANGO_WORKFLOWS", None) or {}),
        "METRICS": True,
    }
    return metrics()


@pytest.fixture
def sample(metrics_on):
    """`sample(name, **labels)`: the value of one sample of the process's metrics (0 if none)."""

    def read(name: str, **labels: str) -> float:
        return metrics_on.registry.get_sample_value(name, labels) or 0.0

    return read
