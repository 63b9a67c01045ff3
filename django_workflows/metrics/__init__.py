"""Prometheus metrics (the extra `prometheus`): the worker's counters and histograms
(counters, served by server on `runworkflows --metrics-port`) and the database's gauges
(gauges, served by `view`, a Django view to put in the project's URLconf)."""

from .gauges import view

__all__ = ["view"]
