"""Optional integrations, each behind an extra of its own (`otel`: opentelemetry)."""
