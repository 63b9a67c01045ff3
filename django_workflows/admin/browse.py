"""Signals, schedules and rate-limit windows: pages to look at, never to edit."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.safestring import SafeString

from ..conf import database_alias
from ..models import Signal
from ..store import payloads
from .display import decoded, pretty_json
from .pages import BoundedPaginator
from .search import drop_long_search


class ReadOnlyAdmin(admin.ModelAdmin):
    """View only: no add, change or delete, and no bulk delete; a bounded search."""

    class Media:
        css = {"all": ("django_workflows/admin.css",)}

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).using(database_alias())

    def get_changelist_instance(self, request: HttpRequest) -> ChangeList:
        refused = drop_long_search(request)
        if refused is not None:
            self.message_user(request, refused, messages.ERROR)
        return super().get_changelist_instance(request)


class SignalAdmin(ReadOnlyAdmin):
    list_display = ("id", "name", "key", "dedupe_id", "created_at")
    # The creation time by ranges, and a bounded count (pages.py), as the instance list's.
    list_filter = ("name", ("created_at", admin.DateFieldListFilter))
    search_fields = ("name", "key", "=dedupe_id")
    search_help_text = "Signal name or key (or exact dedupe id)."
    show_full_result_count = False
    paginator = BoundedPaginator
    ordering = ("-id",)
    fields = ("id", "name", "key", "dedupe_id", "created_at", "payload_json")
    readonly_fields = fields

    @admin.display(description="payload")
    def payload_json(self, obj: Signal) -> SafeString:
        return pretty_json(decoded("payload", obj.payload, payloads.signal_at(obj)))


class RateLimitWindowAdmin(ReadOnlyAdmin):
    """Why a pending instance waits: the rate-limit windows and how full they are."""

    list_display = ("workflow", "scope", "key", "count", "window_end")
    list_filter = ("workflow", "scope")
    search_fields = ("workflow", "key")
    readonly_fields = ("workflow", "scope", "key", "count", "window_end")
    fields = readonly_fields
