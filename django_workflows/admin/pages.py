"""The instance list's pages: a count that stops at COUNTED, and a page read for its first rows.

Django's admin counts the filtered instances for its pages: a `COUNT(*)` that reads every row
the filters keep, 100 ms and more at a million instances. This paginator counts the first
COUNTED + 1 rows at most: the page says "More than 10000 workflow instances" and offers the
pages up to there; a narrower filter or a search finds the others.

A page's rows are read in the backend's first_rows(): a filter by a common tag then reads the
instances in the list's order and stops at the page's end, rather than reading and sorting all
the tag's instances (store/backends/mysql/backend.py).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet

from ..store.backends import backend

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

    def page(self, number: Any) -> Page:
        page = super().page(number)
        rows: QuerySet[Any] = page.object_list  # type: ignore[assignment]  # a slice of the list's
        with backend(rows.db).first_rows():
            len(rows)  # read here: the QuerySet keeps its rows
        return page
