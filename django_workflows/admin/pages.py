"""The instance list's pages: a count that stops at COUNTED.

Django's admin counts the filtered instances for its pages: a `COUNT(*)` that reads every row
the filters keep, 100 ms and more at a million instances. This paginator counts the first
COUNTED + 1 rows at most: the page says "More than 10000 workflow instances" and offers the
pages up to there; a narrower filter or a search finds the others.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.core.paginator import Paginator
from django.db.models import QuerySet

COUNTED = 10_000
"""The most instances the list counts."""


class BoundedPaginator(Paginator):
    """A Paginator whose count is at most COUNTED (`capped` when there are more)."""

    capped = False

    @cached_property
    def count(self) -> int:
        rows: QuerySet[Any] = self.object_list  # type: ignore[assignment]  # the changelist's
        counted = rows.order_by()[: COUNTED + 1].count()
        self.capped = counted > COUNTED
        return min(counted, COUNTED)
