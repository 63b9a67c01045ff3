"""The confirmation page of the actions that cannot be undone (cancel, terminate, force delete).

Like Django's *Delete selected*: the first POST shows the selected instances and what the
action will do to each, and changes nothing; the action runs when that page's form is posted
back with `post=yes`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from ..conf import database_alias
from ..engine.journal import COMPENSATION_PREFIX
from ..engine.replaycheck import pending_compensations
from ..errors import WorkflowError
from ..models import WorkflowInstance
from .display import change_url, changelist_url, readable_name, status_badge

CONFIRM_SHOWN = 100  # rows listed on the page; all of them are acted on

TEMPLATE = "django_workflows/admin/action_confirmation.html"


def confirmed(request: HttpRequest) -> bool:
    """Whether this POST is the confirmation page's answer."""
    return request.POST.get("post") == "yes"


def confirmation(
    modeladmin: admin.ModelAdmin,
    request: HttpRequest,
    queryset: QuerySet[WorkflowInstance],
    *,
    action: str,
    label: str,
    explanation: str,
    refusal: Callable[[WorkflowInstance], str | None],
    back: str | None = None,
    detail: Callable[[WorkflowInstance], str] | None = None,
) -> TemplateResponse:
    """The page that asks to confirm `action` on the selected instances: each with its status
    and, for the ones the action will refuse, why; for the others, what `detail` says the
    action will do to it. `back` is where "No" leads (the changelist by default)."""
    count = queryset.count()
    shown = list(queryset.order_by("created_at", "id")[:CONFIRM_SHOWN])
    rows = []
    for row in shown:
        refused = refusal(row)
        rows.append(
            {
                "id": row.pk,
                "url": change_url(WorkflowInstance, row.pk),
                "workflow": row.workflow,
                "badge": status_badge(row.status),
                "refusal": refused,
                "detail": detail(row) if detail is not None and refused is None else None,
            }
        )
    # Posted back as they came: the ids ticked, and "select across" when all matching rows were
    # selected (the page's query string keeps the filters they were selected under).
    selected = request.POST.getlist(helpers.ACTION_CHECKBOX_NAME) or [row.pk for row in shown]
    opts = modeladmin.model._meta
    context: dict[str, Any] = {
        **modeladmin.admin_site.each_context(request),
        "title": f"{label} {count} selected instance{'' if count == 1 else 's'}?",
        "opts": opts,
        "media": modeladmin.media,
        "action": action,
        "label": label,
        "explanation": explanation,
        "rows": rows,
        "more": max(count - CONFIRM_SHOWN, 0),
        "selected": selected,
        "select_across": request.POST.get("select_across") == "1",
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "back": back or changelist_url(WorkflowInstance),
    }
    request.current_app = modeladmin.admin_site.name
    return TemplateResponse(request, TEMPLATE, context)


def compensations_line(row: WorkflowInstance) -> str:
    """What a cancel of `row` undoes, for its confirmation page: the compensations it runs, in
    the order the engine runs them, read from the instance's journal."""
    try:
        steps = pending_compensations(row.pk, using=database_alias())
    except WorkflowError as error:
        return f"Its compensations cannot be listed: {error}"
    if not steps:
        return "Runs no compensation: none is registered since its last commit point."
    count = len(steps)
    undo = ", then ".join(readable_name(f"{COMPENSATION_PREFIX}{step}") for step in steps)
    return f"Runs {count} compensation{'' if count == 1 else 's'}: {undo}."
