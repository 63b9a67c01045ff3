"""The admin's "Rerun from a step": its permission, the page that chooses the step, the call to
fork(), and the links between a fork and its original on their pages."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from ..client.forks import fork as fork_instance
from ..conf import database_alias
from ..engine.journal import FORK_ENTRY
from ..engine.registry import registry
from ..errors import (
    WorkflowIdConflictError,
    WorkflowNotFoundError,
    WorkflowPayloadError,
    WorkflowStateError,
)
from ..models import JournalEntry, WorkflowInstance
from .actions import unreadable
from .display import change_url, changelist_url, status_badge

TEMPLATE = "django_workflows/admin/fork_step.html"
FORKS_SHOWN = 20


def journal_steps(row: WorkflowInstance) -> list[str]:
    """The names of the instance's steps, in journal order (the kind is stored plain)."""
    entries = JournalEntry.objects.using(row._state.db).filter(
        instance_id=row.id, document__kind="step"
    )
    return list(entries.order_by("id").values_list("name", flat=True))


def fork_refusal(row: WorkflowInstance) -> str | None:
    """Why "Rerun from a step" does not apply to this row: no code for it, or no step yet."""
    if registry.get(row.workflow, row.version) is None:
        return f"{row.id} is of {row.workflow}@{row.version}, whose code is not registered."
    if not journal_steps(row):
        return f"{row.id} has no step in its journal yet."
    return None


class StepForm(forms.Form):
    """The step to rerun from, one of the instance's journal's."""

    from_step = forms.ChoiceField(label="Rerun from", widget=forms.RadioSelect)

    def __init__(self, *args: Any, steps: list[str], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["from_step"].choices = [(name, name) for name in steps]  # type: ignore[attr-defined]


class ForkAdmin(admin.ModelAdmin):
    """What WorkflowInstanceAdmin takes from this module: the action, its permission, and the
    "forked from" and "forks" fields."""

    def has_fork_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_workflows.fork_workflowinstance")

    @admin.action(description="Rerun from a step", permissions=["fork"])
    def fork(
        self, request: HttpRequest, queryset: QuerySet[WorkflowInstance]
    ) -> HttpResponse | None:
        """One instance at a time: the page that lists its steps, then, posted back with the
        step chosen, its fork, and the fork's page."""
        rows = list(queryset[:2])
        if len(rows) != 1:
            self.message_user(
                request, "Rerun from a step takes one instance at a time.", messages.ERROR
            )
            return None
        row = rows[0]
        why = fork_refusal(row)
        if why is not None:
            self.message_user(request, f"Refused: {why}", messages.ERROR)
            return None
        steps = journal_steps(row)
        form = StepForm(request.POST if request.POST.get("post") == "yes" else None, steps=steps)
        if not form.is_valid():
            return self._step_page(request, row, form)
        step = form.cleaned_data["from_step"]
        try:
            forked = fork_instance(row.id, from_step=step, using=database_alias())
        except (
            ValueError,
            WorkflowStateError,
            WorkflowNotFoundError,
            WorkflowIdConflictError,
        ) as error:
            self.message_user(request, f"Refused: {error}", messages.ERROR)
            return None
        except WorkflowPayloadError as error:
            self.message_user(request, f"Refused: {unreadable(row.id, error)}", messages.ERROR)
            return None
        self.message_user(
            request,
            f'Forked {row.id} from step "{step}" as {forked.id}: a worker reruns that step and '
            f"what follows.",
            messages.SUCCESS,
        )
        return HttpResponseRedirect(change_url(WorkflowInstance, forked.id))

    def _step_page(
        self, request: HttpRequest, row: WorkflowInstance, form: StepForm
    ) -> TemplateResponse:
        opts = self.model._meta
        context: dict[str, Any] = {
            **self.admin_site.each_context(request),
            "title": f"Rerun {row.id} from a step",
            "opts": opts,
            "media": self.media,
            "row": row,
            "url": change_url(WorkflowInstance, row.pk),
            "badge": status_badge(row.status),
            "form": form,
            "steps": [name for name, _ in form.fields["from_step"].choices],  # type: ignore[attr-defined]
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, TEMPLATE, context)

    @admin.display(description="forked from")
    def forked_from_link(self, obj: WorkflowInstance) -> SafeString | str:
        if not obj.forked_from:
            return "-"
        step = (
            JournalEntry.objects.using(obj._state.db)
            .filter(instance_id=obj.id, name=FORK_ENTRY)
            .values_list("document", flat=True)
            .first()
        ) or {}
        return format_html(
            'Forked from <a href="{}">{}</a>, rerun from step <code>{}</code>',
            change_url(WorkflowInstance, obj.forked_from),
            obj.forked_from,
            step.get("from_step", "?"),
        )

    @admin.display(description="forks")
    def forks_list(self, obj: WorkflowInstance) -> SafeString | str:
        rows = list(
            WorkflowInstance.objects.using(obj._state.db)
            .filter(forked_from=obj.id)
            .order_by("created_at", "id")
            .values_list("id", "status")[: FORKS_SHOWN + 1]
        )
        if not rows:
            return "-"
        items = format_html_join(
            "",
            '<li><a href="{}">{}</a> {}</li>',
            (
                (change_url(WorkflowInstance, id), id, status_badge(status))
                for id, status in rows[:FORKS_SHOWN]
            ),
        )
        more = ""
        if len(rows) > FORKS_SHOWN:
            more = format_html(
                '<li><a href="{}">all of them</a></li>',
                changelist_url(WorkflowInstance, forked_from=obj.id),
            )
        return format_html('<ul class="dw-list">{}{}</ul>', items, more)
