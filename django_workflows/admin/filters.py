"""The instance list's filters whose choices never scan the instances: the workflows and
versions the registry holds, the schedules the schedule table holds, the fair keys their
index lists (Backend.listed_fair_keys). Django's own filter of a field would read a
`SELECT DISTINCT` of the column over the whole table for its choices: 100 ms each at a
million instances. Any value works in the URL (`?workflow=...`), listed or not."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from ..engine.registry import registry
from ..models import WorkflowSchedule
from ..store.backends import backend

LISTED = 100
"""The most schedules and fair keys a filter offers."""


class ValueFilter(admin.SimpleListFilter):
    """Instances whose field `parameter_name` has the value chosen; the choices are
    `values()` and the value in the URL."""

    def values(self, request: HttpRequest, model_admin: Any) -> list[str]:
        raise NotImplementedError

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        values = set(self.values(request, model_admin))
        if self.value():
            values.add(self.value())  # type: ignore[arg-type]
        return [(value, value) for value in sorted(values, key=self.order)]

    def order(self, value: str) -> Any:
        return value

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset if not value else queryset.filter(**{str(self.parameter_name): value})


class WorkflowFilter(ValueFilter):
    """Instances of one workflow: the registered workflows."""

    title = "workflow"
    parameter_name = "workflow"

    def values(self, request: HttpRequest, model_admin: Any) -> list[str]:
        return [definition.name for definition in registry.all()]


class VersionFilter(ValueFilter):
    """Instances of one version: the versions registered of the chosen workflow, or of every
    workflow."""

    title = "version"
    parameter_name = "version"

    def values(self, request: HttpRequest, model_admin: Any) -> list[str]:
        workflow = request.GET.get(WorkflowFilter.parameter_name)
        return [str(version) for name, version in registry.pairs([workflow] if workflow else None)]

    def order(self, value: str) -> Any:
        return (0, int(value)) if value.isdigit() else (1, value)

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if not value:
            return queryset
        return queryset.filter(version=int(value)) if value.isdigit() else queryset.none()


class ScheduleFilter(ValueFilter):
    """Instances one schedule started: the schedules saved (declared or upserted), LISTED at
    most, read by their primary key."""

    title = "schedule"
    parameter_name = "schedule_id"

    def values(self, request: HttpRequest, model_admin: Any) -> list[str]:
        rows = WorkflowSchedule.objects.using(model_admin.get_queryset(request).db)
        return list(rows.order_by("id").values_list("id", flat=True)[:LISTED])


class FairKeyFilter(ValueFilter):
    """Instances of one fair key (@workflow(fair_key=...)): the first LISTED keys of their
    index. Shown once an instance has a key."""

    title = "fair key"
    parameter_name = "fair_key"

    def values(self, request: HttpRequest, model_admin: Any) -> list[str]:
        return backend(model_admin.get_queryset(request).db).listed_fair_keys(LISTED)
