"""Subjects in the admin: `WorkflowInstanceInline`, which lists a business object's instances on
its own admin page, and the instance page's link back to the object it is about."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.contenttypes.admin import GenericTabularInline
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import NoReverseMatch
from django.utils.html import format_html
from django.utils.safestring import SafeString

from ..conf import database_alias
from ..models import WorkflowInstance
from ..subjects import subject_label
from .display import change_url, custom_status_short, status_badge


class WorkflowInstanceInline(GenericTabularInline):
    """The workflow instances started with `subject=` the object of the page, newest first:
    status, workflow and version, custom status, last update, and a link to each instance's
    page. Read-only: nothing to add, change or delete here (the instance pages' actions do
    that, through the client). Shown to users who may view workflow instances.

        class OrderAdmin(admin.ModelAdmin):
            inlines = [WorkflowInstanceInline]
    """

    model = WorkflowInstance
    ct_field = "subject_type"
    ct_fk_field = "subject_id"
    fields = (
        "instance_link",
        "status_badge",
        "workflow",
        "version",
        "custom_status_short",
        "updated_at",
    )
    readonly_fields = fields
    ordering = ("-created_at", "-id")
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = False
    classes = ["dw-instances"]  # admin.css hides the rows' repeated names: the link says it
    verbose_name = "workflow instance"
    verbose_name_plural = "workflow instances"

    class Media:
        css = {"all": ("django_workflows/admin.css",)}

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[WorkflowInstance]:
        # Every column comes from the instance's own row: one query for the whole list.
        return super().get_queryset(request).using(database_alias())

    @admin.display(description="instance")
    def instance_link(self, obj: WorkflowInstance) -> SafeString:
        return format_html('<a href="{}">{}</a>', change_url(WorkflowInstance, obj.pk), obj.pk)

    @admin.display(description="status")
    def status_badge(self, obj: WorkflowInstance) -> SafeString:
        return status_badge(obj.status)

    @admin.display(description="custom status")
    def custom_status_short(self, obj: WorkflowInstance) -> str:
        return custom_status_short(obj)


class SubjectAdmin(admin.ModelAdmin):
    """What WorkflowInstanceAdmin takes from this module: the "subject" field of an instance's
    page, a link to the subject's own admin page."""

    @admin.display(description="subject")
    def subject_link(self, obj: WorkflowInstance) -> SafeString | str:
        """The subject, linked to its change page when its model is in this admin site; plain
        text when it is not; "deleted" when its row is gone."""
        using = obj._state.db or database_alias()
        label = subject_label(obj.subject_type_id, obj.subject_id, using)
        if label is None or obj.subject_type_id is None:
            return "-"
        content_type = ContentType.objects.db_manager(using).get_for_id(obj.subject_type_id)
        model = content_type.model_class()
        if model is None:
            return format_html("{} (its model is no longer installed)", label)
        subject = _find(model, obj.subject_id)
        if subject is None:
            return format_html('{} <span class="dw-none">(deleted)</span>', label)
        if not self.admin_site.is_registered(model):
            return format_html("{} ({})", subject, label)
        try:
            url = change_url(model, subject.pk)
        except NoReverseMatch:  # registered with another site's URLs only
            return format_html("{} ({})", subject, label)
        return format_html('<a href="{}">{}</a> ({})', url, subject, label)


def _find(model: type[Any], object_id: str | None) -> Any:
    """The subject's row (from the database the routers give its model), or None when it is
    gone, or when its stored key is not one of this model's any more."""
    try:
        return model._default_manager.filter(pk=object_id).first()
    except (ValidationError, ValueError, TypeError):
        return None
