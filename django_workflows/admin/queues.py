"""The instance admin's queue filter: the queues the registered workflows name and those the
queue's claim index lists (Backend.listed_queues); never a scan of the whole table."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from ..definitions import DEFAULT_QUEUE
from ..engine.registry import registry
from ..store.backends import backend

LISTED_QUEUES = 100
"""The most queues of instances with a wake time the filter offers (any other works in the
URL, `?queue=...`)."""


class QueueFilter(admin.SimpleListFilter):
    """Instances in one queue. The choices are "default", the queues of the registered
    workflows, and those the claim index lists: the queues of the instances with a wake time
    (on MySQL and MariaDB, of every instance), by a loose index scan; a DISTINCT over the whole
    table would read every finished instance."""

    title = "queue"
    parameter_name = "queue"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        waiting = backend(model_admin.get_queryset(request).db).listed_queues(LISTED_QUEUES)
        queues = {DEFAULT_QUEUE, *(definition.queue for definition in registry.all())}
        queues.update(waiting)
        if self.value():
            queues.add(self.value())  # type: ignore[arg-type]
        return [(queue, queue) for queue in sorted(queues)]

    def has_output(self) -> bool:
        """Shown once there is a choice to make: a site whose instances all wait in "default"
        sees no queue filter."""
        return len(self.lookup_choices) > 1

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        queue = self.value()
        return queryset if not queue else queryset.filter(queue=queue)
