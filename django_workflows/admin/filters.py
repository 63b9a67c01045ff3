"""The instance admin's filter by fair key (@workflow(fair_key=...)): the keys the index of the
keyed instances lists (Backend.listed_fair_keys); never a scan of the whole table."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from ..store.backends import backend

LISTED_KEYS = 100
"""The most fair keys the filter offers (any other works in the URL, `?fair_key=...`)."""


class FairKeyFilter(admin.SimpleListFilter):
    """Instances of one fair key. Shown once an instance has a key."""

    title = "fair key"
    parameter_name = "fair_key"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        keys = set(backend(model_admin.get_queryset(request).db).listed_fair_keys(LISTED_KEYS))
        if self.value():
            keys.add(self.value())  # type: ignore[arg-type]
        return [(key, key) for key in sorted(keys)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        key = self.value()
        return queryset if not key else queryset.filter(fair_key=key)
