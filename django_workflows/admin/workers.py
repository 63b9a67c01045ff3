"""The registry of worker processes in the admin: each worker, live or gone (the live first),
and above the list each queue's backlog of due instances, with a warning row for a queue whose
due instances no live worker claims."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import NoReverseMatch, reverse
from django.utils.safestring import SafeString
from django.utils.timesince import timesince
from django.utils.translation import ngettext

from .. import clock
from ..conf import database_alias, get_settings
from ..models import WorkerProcess, WorkflowInstance
from ..store import workers as worker_registry
from ..worker.health import health
from .browse import ReadOnlyAdmin
from .display import changelist_url, short_time


class LiveFilter(admin.SimpleListFilter):
    """Live or gone: gone once three heartbeats passed without its renewer refreshing it."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("live", "live"), ("gone", "gone")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "live":
            return queryset.filter(gone_at__gt=clock.now())
        if self.value() == "gone":
            return queryset.filter(gone_at__lte=clock.now())
        return queryset


class WorkerProcessAdmin(ReadOnlyAdmin):
    """Read-only; a gone worker's row may be deleted (purge() deletes it a day after)."""

    change_list_template = "django_workflows/admin/worker_change_list.html"
    # The id is "<host>:<pid>:<suffix>": it says the host and the pid (the page and the host
    # filter have them too), so the list fits a 1,400 pixel window without their columns.
    list_display = (
        "id",
        "state",
        "queue_list",
        "running_of",
        "executed",
        "last_seen",
        "started",
        "version",
    )
    list_filter = (LiveFilter, "host")
    search_fields = ("id", "host")
    ordering = ("-gone_at", "id")  # the live first
    fields = (
        "id",
        "host",
        "pid",
        "queues",
        "workflows",
        "concurrency",
        "running",
        "executed",
        "version",
        "heartbeat",
        "started_at",
        "last_seen_at",
        "gone_at",
    )
    readonly_fields = fields

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # A live worker's row comes back at its next heartbeat: only a gone one may go.
        if obj is not None and obj.gone_at > clock.now():
            return False
        return super(ReadOnlyAdmin, self).has_delete_permission(request, obj)

    def delete_model(self, request: HttpRequest, obj: WorkerProcess) -> None:
        worker_registry.unregister(database_alias(), obj.id)  # through the store, as all writes

    def get_actions(self, request: HttpRequest, action_location: Any = None) -> dict[str, Any]:
        # Django 6.1 passes where the actions show (`action_location`) and warns about an
        # override that cannot take it; Django before 6.1 has no such argument.
        if action_location is None:
            actions = super().get_actions(request)
        else:
            actions = super().get_actions(request, action_location)  # type: ignore[call-arg]
        actions.pop("delete_selected", None)  # it would delete live rows too
        return actions

    @admin.display(description="state", ordering="-gone_at")
    def state(self, obj: WorkerProcess) -> str:
        return "live" if obj.gone_at > clock.now() else "gone"

    @admin.display(description="queues")
    def queue_list(self, obj: WorkerProcess) -> str:
        return ", ".join(obj.queues or []) or "every queue"

    @admin.display(description="last seen", ordering="last_seen_at")
    def last_seen(self, obj: WorkerProcess) -> SafeString:
        return short_time(obj.last_seen_at)

    @admin.display(description="started", ordering="started_at")
    def started(self, obj: WorkerProcess) -> SafeString:
        return short_time(obj.started_at)

    @admin.display(description="running")
    def running_of(self, obj: WorkerProcess) -> str:
        return f"{obj.running} / {obj.concurrency}"

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        state = health(using=database_alias())
        queues = [
            {
                "backlog": queue,
                "link": changelist_url(WorkflowInstance, queue=queue.queue),
                "waiting": timesince(queue.oldest_due_at, now=state.now),  # the workflow clock's
                "unserved": ngettext(
                    "%(count)d due instance that no live worker claims.",
                    "%(count)d due instances that no live worker claims.",
                    queue.unserved,
                )
                % {"count": queue.unserved},
            }
            for queue in state.queues
        ]
        context = {
            **(extra_context or {}),
            "workflow_queues": queues,
            "workflow_alerts": len(state.alerts),
            "workflow_live_workers": ngettext(
                "%(count)d live worker.", "%(count)d live workers.", len(state.live)
            )
            % {"count": len(state.live)},
            "workflow_metrics_url": _metrics_url(),
        }
        return super().changelist_view(request, extra_context=context)


def _metrics_url() -> str | None:
    """The metrics view's URL while METRICS is on and django_workflows.urls is routed."""
    if not get_settings().metrics:
        return None
    try:
        return reverse("django_workflows:metrics")
    except NoReverseMatch:
        return None
