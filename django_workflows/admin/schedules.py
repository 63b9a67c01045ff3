"""Schedules in the admin: what each runs and when next, and pause, resume and trigger.

Like the instance actions, each action goes through the client (`django_workflows.schedules`)
per selected schedule and says what it did and what it refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from .. import schedules
from ..conf import database_alias
from ..errors import WorkflowError, WorkflowPayloadError
from ..models import WorkflowInstance, WorkflowSchedule
from ..schedules.cron import cron_reading
from ..store import schedules as schedules_store
from .actions import Outcome, report, unreadable
from .browse import ReadOnlyAdmin
from .display import changelist_url, decoded, pretty_json

NEXT_SHOWN = 5


class WorkflowScheduleAdmin(ReadOnlyAdmin):
    list_display = ("id", "workflow", "version", "timing", "paused", "wake_at", "declared")
    list_filter = ("paused", "declared", "workflow")
    search_fields = ("id", "workflow")
    fields = (
        "id",
        "workflow",
        "version",
        "declared",
        "timing",
        "cron_reading",
        "paused",
        "next_occurrences",
        "instances",
        "input_json",
        "spec_json",
        "state_json",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields
    actions = ["pause", "resume", "trigger"]

    def has_pause_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_workflows.pause_workflowschedule")

    def has_trigger_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_workflows.trigger_workflowschedule")

    # -- columns and fields --------------------------------------------------------------------

    @admin.display(description="runs")
    def timing(self, obj: WorkflowSchedule) -> str:
        timing = (obj.spec or {}).get("timing") or {}
        if timing.get("cron"):
            text = f"cron {timing['cron']}"
            if len(timing["cron"].split()) == 6:
                text += " (seconds first)"
        elif timing.get("rrule"):
            text = f"rrule {timing['rrule']}"
        else:
            text = f"every {timing.get('every')}s"
        tz = timing.get("tz") or "UTC"
        return text if tz == "UTC" else f"{text} ({tz})"

    @admin.display(description="cron read as")
    def cron_reading(self, obj: WorkflowSchedule) -> str:
        cron = ((obj.spec or {}).get("timing") or {}).get("cron")
        return cron_reading(cron) if cron else "-"

    @admin.display(description="next occurrences")
    def next_occurrences(self, obj: WorkflowSchedule) -> SafeString:
        if obj.paused:
            return mark_safe('<span class="dw-none">paused</span>')  # noqa: S308 - a constant
        try:
            upcoming = schedules.preview(obj.pk, count=NEXT_SHOWN)
        except (WorkflowError, ValueError) as error:
            return format_html('<span class="dw-none">{}</span>', error)
        if not upcoming:
            return mark_safe('<span class="dw-none">none: it ended</span>')  # noqa: S308
        return format_html(
            "<ol>{}</ol>",
            format_html_join("", "<li>{}</li>", ((at.isoformat(),) for at in upcoming)),
        )

    @admin.display(description="input")
    def input_json(self, obj: WorkflowSchedule) -> SafeString:
        return pretty_json(decoded("input", obj.input, schedules_store.input_at(obj.pk)))

    @admin.display(description="spec")
    def spec_json(self, obj: WorkflowSchedule) -> SafeString:
        return pretty_json(obj.spec)

    @admin.display(description="state")
    def state_json(self, obj: WorkflowSchedule) -> SafeString:
        return pretty_json(obj.state)

    @admin.display(description="instances")
    def instances(self, obj: WorkflowSchedule) -> SafeString:
        return format_html(
            '<a href="{}">instances started by this schedule</a>',
            changelist_url(WorkflowInstance, schedule_id=obj.id),
        )

    # -- the actions ---------------------------------------------------------------------------

    def _apply(
        self,
        queryset: QuerySet[WorkflowSchedule],
        call: Callable[[WorkflowSchedule], Any],
        settled: Callable[[str], bool] | None = None,
    ) -> Outcome:
        """Call `call` per schedule; its errors are refusals. `settled` tells, for a call that
        raised WorkflowPayloadError, whether it still did its work (pause and resume change the
        schedule before they read its input back)."""
        done: list[str] = []
        refused: list[tuple[str, str]] = []
        notes: list[str] = []
        for schedule in queryset.order_by("id"):
            try:
                call(schedule)
                done.append(schedule.pk)
            except WorkflowPayloadError as error:
                note = unreadable(f"{schedule.pk}'s input", error)
                if settled is not None and settled(schedule.pk):
                    done.append(schedule.pk)
                    notes.append(note)
                else:
                    refused.append((schedule.pk, note))
            except (WorkflowError, ValueError) as error:
                refused.append((schedule.pk, f"{schedule.pk}: {error}"))
        return Outcome(done, refused, notes)

    def _paused(self, id: str) -> bool | None:
        """Whether the schedule is paused now, read without its input; None once it is gone."""
        rows = WorkflowSchedule.objects.using(database_alias()).filter(pk=id)
        return rows.values_list("paused", flat=True).first()

    @admin.action(description="Pause", permissions=["pause"])
    def pause(self, request: HttpRequest, queryset: QuerySet[WorkflowSchedule]) -> None:
        outcome = self._apply(
            queryset, lambda s: schedules.pause(s.pk), lambda id: self._paused(id) is True
        )
        report(self, request, "Paused", outcome, noun="schedule")

    @admin.action(description="Resume (from the next occurrence)", permissions=["pause"])
    def resume(self, request: HttpRequest, queryset: QuerySet[WorkflowSchedule]) -> None:
        outcome = self._apply(
            queryset, lambda s: schedules.resume(s.pk), lambda id: self._paused(id) is False
        )
        report(self, request, "Resumed", outcome, noun="schedule")

    @admin.action(description="Trigger an occurrence now", permissions=["trigger"])
    def trigger(self, request: HttpRequest, queryset: QuerySet[WorkflowSchedule]) -> None:
        outcome = self._apply(queryset, lambda s: schedules.trigger(s.pk))
        report(self, request, "Triggered", outcome, noun="schedule")
