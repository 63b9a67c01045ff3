from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_exporter = InMemorySpanExporter()
_provider = TracerProvider()
_provider.add_span_processor(SimpleSpanProcessor(_exporter))
# The global provider can be set once per process; the tests share this one.
trace.set_tracer_provider(_provider)


@pytest.fixture
def spans(settings):
    """The OpenTelemetry middleware on, with the SDK exporting to memory: `spans()` lists the
    spans ended so far in this test, in the order they ended."""
    _exporter.clear()
    settings.DJANGO_WORKFLOWS = {
        **(getattr(settings, "DJANGO_WORKFLOWS", None) or {}),
        "STEP_MIDDLEWARE": ["django_workflows.contrib.opentelemetry.middleware"],
    }
    yield lambda: list(_exporter.get_finished_spans())
    _exporter.clear()


@pytest.fixture
def tracer():
    return _provider.get_tracer("tests")
