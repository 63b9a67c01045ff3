"""The instance pages: the changelist, the read-only change page with its timeline, and
the actions, each a client call per selected row."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.contrib.admin import helpers
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from ..client import approvals, operations
from ..client import instances as client
from ..conf import database_alias
from ..models import Signal, WorkflowInstance, WorkflowSchedule
from ..store.published import PREFIX as VALUE_PREFIX
from .actions import (
    admin_reason,
    apply,
    breakpoints,
    delete_refusal,
    force_refusal,
    report,
    resume_refusal,
    retry_refusal,
)
from .browse import ReadOnlyAdmin
from .confirm import compensations_line, confirmation, confirmed
from .display import (
    change_url,
    changelist_url,
    custom_status_short,
    decoded_document,
    decoded_field,
    pretty_json,
    short_time,
    status_badge,
)
from .failures import error_tracebacks, without_tracebacks
from .filters import FairKeyFilter, ScheduleFilter, VersionFilter, WorkflowFilter
from .forks import ForkAdmin, fork_refusal
from .pages import BoundedPaginator
from .queues import QueueFilter
from .streams import StreamsAdmin
from .subjects import SubjectAdmin
from .tags import TagFilter, TagsAdmin
from .tasks import TaskFilter, TasksAdmin
from .timeline import build_timeline, journal_row

CHILDREN_SHOWN = 100

# The actions, offered on the changelist and as buttons on the change page.
ACTIONS = ("cancel", "terminate", "retry", "resume", "fork", "delete", "force_delete")


class WorkflowInstanceAdmin(
    SubjectAdmin, TagsAdmin, TasksAdmin, StreamsAdmin, ForkAdmin, ReadOnlyAdmin
):
    list_display = (
        "id",
        "status_badge",
        "workflow",
        "version",
        "queue",
        "custom_status_short",
        "wakes",
        "runs_of",
        "updated",
    )
    # Choices from the registry, the schedules and the indexes, never a scan of the
    # instances (filters.py); the creation time by ranges, not a date hierarchy (whose choices
    # are a SELECT DISTINCT of the truncated time over the whole table).
    list_filter = (
        "status",
        WorkflowFilter,
        VersionFilter,
        QueueFilter,
        FairKeyFilter,
        TagFilter,
        TaskFilter,
        ScheduleFilter,
        ("created_at", admin.DateFieldListFilter),
    )
    paginator = BoundedPaginator
    # Exact matches, each by an index: a LIKE '%...%' reads every row (seconds at a million).
    search_fields = ("id__exact", "parent_id__exact", "fair_key__exact")
    search_help_text = (
        "An instance id, a parent's id, a fair key or a tag, exactly; tag:<tag> for a tag only."
    )
    show_full_result_count = False
    list_per_page = 50
    # One direction: MySQL and MariaDB read it from dw_instance_created backward (its entries
    # end with the primary key); "-created_at, id" made them sort a million rows.
    ordering = ("-created_at", "-id")
    actions = list(ACTIONS)
    change_form_template = "django_workflows/admin/instance_change_form.html"
    fieldsets = (
        (
            None,
            {
                "fields": (
                    ("id", "status_badge"),
                    ("workflow", "version", "queue"),
                    "custom_status_json",
                    ("created_at", "updated_at"),
                    ("wake_at", "deadline"),
                    ("runs", "generation", "priority"),
                )
            },
        ),
        (
            "Waits and related instances",
            {
                "fields": (
                    "waits_list",
                    "subject_link",
                    "parent_link",
                    ("schedule_link", "scheduled_at"),
                    "children",
                    ("forked_from_link", "forks_list"),
                )
            },
        ),
        (
            "Data",
            {
                "fields": (
                    "input_json",
                    "output_json",
                    "published_values",
                    "streams_table",
                    "error_summary",
                )
            },
        ),
        ("Tags and search attributes", {"fields": ("tags_list", "attributes_table")}),
        (
            "Lease and requests",
            {
                "classes": ("collapse",),
                "fields": (
                    ("lease_owner", "lease_until"),
                    ("cancel_requested", "terminate_requested"),
                    "cancel_reason",
                    ("concurrency_key", "rate_limit_key"),
                    ("fair_key", "parked"),
                ),
            },
        ),
    )
    readonly_fields = (
        "id",
        "status_badge",
        "workflow",
        "version",
        "queue",
        "custom_status_json",
        "created_at",
        "updated_at",
        "wake_at",
        "deadline",
        "runs",
        "generation",
        "priority",
        "parent_link",
        "schedule_link",
        "scheduled_at",
        "children",
        "forked_from_link",
        "forks_list",
        "waits_list",
        "subject_link",
        "input_json",
        "output_json",
        "published_values",
        "streams_table",
        "error_summary",
        "tags_list",
        "attributes_table",
        "lease_owner",
        "lease_until",
        "cancel_requested",
        "terminate_requested",
        "cancel_reason",
        "concurrency_key",
        "rate_limit_key",
        "fair_key",
        "parked",
        "task_path",
    )

    # -- permissions: view only (Django's delete would bypass the client); the actions have
    # their own ---------------------------------------------------------------------------------

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_workflows.cancel_workflowinstance")

    def has_terminate_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_workflows.terminate_workflowinstance")

    def has_retry_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_workflows.retry_workflowinstance")

    def has_resume_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_workflows.resume_workflowinstance")

    def has_workflow_delete_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_workflows.delete_workflowinstance")

    # -- columns and fields --------------------------------------------------------------------

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: WorkflowInstance) -> SafeString:
        return status_badge(obj.status)

    @admin.display(description="custom status")
    def custom_status_short(self, obj: WorkflowInstance) -> str:
        return custom_status_short(obj)

    @admin.display(description="runs", ordering="runs")
    def runs_of(self, obj: WorkflowInstance) -> str:
        # The generation shows only once the instance continued as new: a column of zeros
        # would not fit a 1,400 pixel window.
        return f"{obj.runs} · gen {obj.generation}" if obj.generation else str(obj.runs)

    @admin.display(description="wakes", ordering="wake_at")
    def wakes(self, obj: WorkflowInstance) -> SafeString:
        return short_time(obj.wake_at)

    @admin.display(description="updated", ordering="updated_at")
    def updated(self, obj: WorkflowInstance) -> SafeString:
        return short_time(obj.updated_at)

    @admin.display(description="custom status")
    def custom_status_json(self, obj: WorkflowInstance) -> SafeString:
        return pretty_json(decoded_field(obj, "custom_status"))

    @admin.display(description="input")
    def input_json(self, obj: WorkflowInstance) -> SafeString:
        return pretty_json(decoded_field(obj, "input"))

    @admin.display(description="output")
    def output_json(self, obj: WorkflowInstance) -> SafeString:
        return pretty_json(decoded_field(obj, "output"))

    @admin.display(description="published values")
    def published_values(self, obj: WorkflowInstance) -> SafeString | str:
        """Each name's latest value of ctx.set_value() (a note where the codec cannot read it)."""
        latest: dict[str, Any] = {}
        entries = obj.entries.filter(name__startswith=VALUE_PREFIX).order_by("id")
        for name, document in entries.values_list("name", "document"):
            latest[document.get("name")] = decoded_document(obj.pk, name, document).get("result")
        if not latest:
            return "-"
        rows = format_html_join(
            "",
            '<tr><th scope="row"><code>{}</code></th><td>{}</td></tr>',
            ((name, pretty_json(value)) for name, value in latest.items()),
        )
        return format_html('<table class="dw-values">{}</table>', rows)

    @admin.display(description="error")
    def error_summary(self, obj: WorkflowInstance) -> SafeString:
        error = decoded_field(obj, "error")
        if not isinstance(error, dict):
            return pretty_json(error)
        lines = [("Error", error)]
        if isinstance(error.get("cause"), dict):
            lines.append(("Cause", error["cause"]))
        if isinstance(error.get("compensation"), dict):
            lines.append(("Compensation error", error["compensation"]))
        summary = format_html_join(
            "",
            '<p class="dw-error-line"><strong>{}:</strong> <code>{}</code> {}</p>',
            ((label, e.get("name", "?"), e.get("message", "")) for label, e in lines),
        )
        return format_html(
            "{}{}{}", summary, error_tracebacks(error), pretty_json(without_tracebacks(error))
        )

    @admin.display(description="parent")
    def parent_link(self, obj: WorkflowInstance) -> SafeString | str:
        if not obj.parent_id:
            return "-"
        return format_html(
            '<a href="{}">{}</a>', change_url(WorkflowInstance, obj.parent_id), obj.parent_id
        )

    @admin.display(description="schedule")
    def schedule_link(self, obj: WorkflowInstance) -> SafeString | str:
        if not obj.schedule_id:
            return "-"
        return format_html(
            '<a href="{}">{}</a> (<a href="{}">its instances</a>)',
            change_url(WorkflowSchedule, obj.schedule_id),
            obj.schedule_id,
            changelist_url(WorkflowInstance, schedule_id=obj.schedule_id),
        )

    @admin.display(description="children")
    def children(self, obj: WorkflowInstance) -> SafeString | str:
        rows = list(
            WorkflowInstance.objects.using(database_alias())
            .filter(parent_id=obj.id)
            .order_by("created_at", "id")
            .values_list("id", "workflow", "status")[: CHILDREN_SHOWN + 1]
        )
        if not rows:
            return "-"
        items = format_html_join(
            "",
            '<li><a href="{}">{}</a> {} {}</li>',
            (
                (change_url(WorkflowInstance, id), id, workflow, status_badge(status))
                for id, workflow, status in rows[:CHILDREN_SHOWN]
            ),
        )
        more = ""
        if len(rows) > CHILDREN_SHOWN:
            more = format_html(
                '<li><a href="{}">all of them</a></li>',
                changelist_url(WorkflowInstance, parent_id=obj.id),
            )
        return format_html('<ul class="dw-list">{}{}</ul>', items, more)

    @admin.display(description="waits for")
    def waits_list(self, obj: WorkflowInstance) -> SafeString | str:
        waits = list(obj.waits.all().values_list("signal", "key"))
        if not waits:
            return "-"
        return format_html(
            '<ul class="dw-list">{}</ul>',
            format_html_join(
                "",
                '<li>signal <a href="{}"><code>{}</code></a>, key <code>{}</code></li>',
                (
                    (
                        changelist_url(Signal, name=signal, **({"key": key} if key else {})),
                        signal,
                        key or "(none)",
                    )
                    for signal, key in waits
                ),
            ),
        )

    # -- the change page: timeline, journal table, action buttons ------------------------------

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        context = dict(extra_context or {})
        obj = self.get_object(request, unquote(object_id))
        if obj is not None:
            entries = [
                (e.name, decoded_document(obj.pk, e.name, e.document))
                for e in obj.entries.all().order_by("id")
            ]
            context["timeline"] = build_timeline(obj, entries)
            context["journal"] = [journal_row(name, doc) for name, doc in entries]
            context["workflow_actions"] = self._buttons(request, obj)
        return super().change_view(request, object_id, form_url, context)

    def _buttons(self, request: HttpRequest, obj: WorkflowInstance) -> list[dict[str, str]]:
        buttons = []
        checks = {
            "cancel": (
                "Cancel",
                self.has_cancel_permission,
                lambda o: operations.cancel_refusal(o, False),
            ),
            "terminate": (
                "Terminate",
                self.has_terminate_permission,
                lambda o: operations.cancel_refusal(o, True),
            ),
            "retry": ("Retry", self.has_retry_permission, retry_refusal),
            "resume": ("Resume", self.has_resume_permission, resume_refusal),
            "fork": ("Rerun from a step", self.has_fork_permission, fork_refusal),
            "delete": ("Delete", self.has_workflow_delete_permission, delete_refusal),
            "force_delete": ("Force delete", self.has_workflow_delete_permission, force_refusal),
        }
        for name, (label, allowed, refusal) in checks.items():
            if allowed(request) and refusal(obj) is None:
                url = reverse(
                    f"admin:django_workflows_workflowinstance_{name}", args=[quote(obj.pk)]
                )
                buttons.append({"name": name, "label": label, "url": url})
        return buttons

    def get_urls(self) -> list[Any]:
        own = [
            path(
                f"<path:object_id>/{name}/",
                self.admin_site.admin_view(self._button_view(name)),
                name=f"django_workflows_workflowinstance_{name}",
            )
            for name in ACTIONS
        ]
        return own + super().get_urls()

    def _button_view(self, name: str) -> Callable[..., HttpResponse]:
        def view(request: HttpRequest, object_id: str) -> HttpResponse:
            if request.method != "POST":
                return HttpResponseNotAllowed(["POST"])
            if name not in self.get_actions(request):  # not allowed for this user
                raise PermissionDenied
            queryset = self.get_queryset(request).filter(pk=unquote(object_id))
            get_object_or_404(queryset)
            asked = getattr(self, name)(request, queryset)
            if asked is not None:  # the confirmation page
                return asked
            if queryset.exists():
                return HttpResponseRedirect(change_url(WorkflowInstance, unquote(object_id)))
            return HttpResponseRedirect(changelist_url(WorkflowInstance))

        return view

    # -- the actions ---------------------------------------------------------------------------

    @admin.action(description="Cancel (runs compensations)", permissions=["cancel"])
    def cancel(
        self, request: HttpRequest, queryset: QuerySet[WorkflowInstance]
    ) -> TemplateResponse | None:
        if not confirmed(request):
            return confirmation(
                self,
                request,
                queryset,
                action="cancel",
                label="Cancel",
                explanation=(
                    "Cancel stops each instance and runs its compensations: the undo of each "
                    "completed step that has one since its last commit point, latest first "
                    "(a refund, a release of stock). It then ends cancelled. A worker applies "
                    "it: to a waiting instance when it next claims it, to a running one at its "
                    "next step, which may complete a step with a compensation first."
                ),
                refusal=lambda row: operations.cancel_refusal(row, False),
                back=self._back(request, queryset),
                detail=compensations_line,
            )
        why = admin_reason(request, "Cancelled")
        outcome = apply(
            queryset,
            lambda row: operations.cancel_refusal(row, False),
            lambda row: client.cancel(row.id, why).accepted,
        )
        report(self, request, "Cancel requested for", outcome, requested=True)
        return None

    @admin.action(description="Terminate (no compensations)", permissions=["terminate"])
    def terminate(
        self, request: HttpRequest, queryset: QuerySet[WorkflowInstance]
    ) -> TemplateResponse | None:
        if not confirmed(request):
            return confirmation(
                self,
                request,
                queryset,
                action="terminate",
                label="Terminate",
                explanation=(
                    "Terminate stops each instance without running its compensations: what its "
                    "steps did stays done, and it ends cancelled. A worker applies it: to a "
                    "waiting instance when it next claims it, to a running one at its next step."
                ),
                refusal=lambda row: operations.cancel_refusal(row, True),
                back=self._back(request, queryset),
            )
        why = admin_reason(request, "Terminated")
        outcome = apply(
            queryset,
            lambda row: operations.cancel_refusal(row, True),
            lambda row: client.terminate(row.id, why).accepted,
        )
        report(self, request, "Terminate requested for", outcome, requested=True)
        return None

    @admin.action(description="Retry failed instances", permissions=["retry"])
    def retry(self, request: HttpRequest, queryset: QuerySet[WorkflowInstance]) -> None:
        outcome = apply(queryset, retry_refusal, lambda row: bool(operations.retry(row.id)))
        report(self, request, "Retried", outcome)

    @admin.action(description="Resume at the breakpoint", permissions=["resume"])
    def resume(self, request: HttpRequest, queryset: QuerySet[WorkflowInstance]) -> None:
        # Each waits at one breakpoint in the common case; several (from gather()) all resume.
        outcome = apply(
            queryset,
            resume_refusal,
            lambda row: all(approvals.resume(row.id, name) for name in breakpoints(row)),
        )
        report(self, request, "Resumed", outcome)

    @admin.action(description="Delete finished instances", permissions=["workflow_delete"])
    def delete(self, request: HttpRequest, queryset: QuerySet[WorkflowInstance]) -> None:
        outcome = apply(queryset, delete_refusal, lambda row: operations.delete(row.id))
        report(self, request, "Deleted", outcome)

    @admin.action(
        description="Force delete (unfinished too, no compensations)",
        permissions=["workflow_delete"],
    )
    def force_delete(
        self, request: HttpRequest, queryset: QuerySet[WorkflowInstance]
    ) -> TemplateResponse | None:
        if not confirmed(request):
            return confirmation(
                self,
                request,
                queryset,
                action="force_delete",
                label="Force delete",
                explanation=(
                    "Force delete deletes each instance with its journal, now, whatever its "
                    "status: an unfinished one goes without running its compensations (its "
                    "children still get their parent_close). This cannot be undone."
                ),
                refusal=force_refusal,
                back=self._back(request, queryset),
            )
        outcome = apply(queryset, force_refusal, lambda row: operations.delete(row.id, force=True))
        report(self, request, "Deleted", outcome)
        return None

    def _back(self, request: HttpRequest, queryset: QuerySet[WorkflowInstance]) -> str:
        """Where a confirmation page's "No" leads: the instance's page from its button, the
        list (with its filters) from the list's action."""
        if helpers.ACTION_CHECKBOX_NAME not in request.POST:
            row = queryset.first()
            if row is not None:
                return change_url(WorkflowInstance, row.pk)
        return request.get_full_path()
