"""The instance admin's Django tasks: the filter "tasks" (instances of the task workflow, or
the rest) and, on a task's page, the path of its function."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from ..models import WorkflowInstance
from ..tasks.names import TASK_PATH, TASK_WORKFLOW
from .display import decoded_field


class TaskFilter(admin.SimpleListFilter):
    """Django tasks (instances of the task workflow) or the other instances; by the workflow
    column, which the claim's index leads with. Shown once the database holds a task."""

    title = "tasks"
    parameter_name = "task"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        rows = WorkflowInstance.objects.using(model_admin.get_queryset(request).db)
        if not self.value() and not rows.filter(workflow=TASK_WORKFLOW).exists():
            return []
        return [("yes", "Django tasks"), ("no", "Other instances")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(workflow=TASK_WORKFLOW)
        if self.value() == "no":
            return queryset.exclude(workflow=TASK_WORKFLOW)
        return queryset


class TasksAdmin(admin.ModelAdmin):
    """What WorkflowInstanceAdmin takes from this module: a task's function path, shown in a
    section of its own on a task's page only."""

    @admin.display(description="task function")
    def task_path(self, obj: WorkflowInstance) -> str:
        input = decoded_field(obj, "input")
        path = input.get(TASK_PATH) if isinstance(input, dict) else None
        return path if isinstance(path, str) else "-"

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets = list(super().get_fieldsets(request, obj))
        if obj is not None and obj.workflow == TASK_WORKFLOW:
            fieldsets.insert(1, ("Django task", {"fields": ("task_path",)}))
        return fieldsets
