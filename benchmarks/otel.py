"""The OpenTelemetry SDK as `run.py --otel` sets it up in every process: a TracerProvider whose
BatchSpanProcessor hands the spans to an exporter that drops them, so the figures are the
middleware's and the SDK's cost, not a collector's."""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

MIDDLEWARE = "django_workflows.contrib.opentelemetry.middleware"


class DroppingExporter(SpanExporter):
    """Counts the spans it is given, and drops them."""

    exported = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        DroppingExporter.exported += len(spans)
        return SpanExportResult.SUCCESS


def install() -> None:
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(DroppingExporter()))
    trace.set_tracer_provider(provider)
