"""The benchmark's own table: what benchmarks/tasks.py's `insert3` task writes to."""

from __future__ import annotations

from django.db import models


class BenchRow(models.Model):
    """One row a benchmark task inserts."""

    value = models.IntegerField()

    def __str__(self) -> str:
        return f"BenchRow {self.pk}: {self.value}"
