"""The instance admin's tags and search attributes: the tag filter, search by a tag, and both
on the change page. Every query here uses an index: the filter never scans the tag table."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Exists, OuterRef, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from ..attributes import TAG_LENGTH, to_value
from ..engine.registry import registry
from ..models import InstanceTag, WorkflowInstance
from .display import changelist_url

RECENT_TAGS = 500
"""How many of the newest tag rows the filter reads for its choices (by primary key)."""
TAG_PREFIX = "tag:"
"""A search that starts with it looks for that tag only: `tag:express`."""


def _with_tag(rows: QuerySet[Any], tag: str) -> QuerySet[Any]:
    return rows.filter(Exists(InstanceTag.objects.filter(instance_id=OuterRef("pk"), tag=tag)))


class TagFilter(admin.SimpleListFilter):
    """Instances with one tag. The choices are the registered workflows' static tags and those
    of the newest RECENT_TAGS tag rows (read by primary key): a DISTINCT over the whole tag
    table would scan it. Any other tag works in the URL, `?tag=...`, and by search."""

    title = "tag"
    parameter_name = "tag"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        rows = InstanceTag.objects.using(model_admin.get_queryset(request).db)
        recent = rows.order_by("-id").values_list("tag", flat=True)[:RECENT_TAGS]
        tags = {tag for definition in registry.all() for tag in definition.tags}
        tags.update(recent)
        if self.value():
            tags.add(self.value())  # type: ignore[arg-type]
        return [(tag, tag) for tag in sorted(tags)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        tag = self.value()
        return queryset if not tag else _with_tag(queryset, tag)


class TagsAdmin(admin.ModelAdmin):
    """Search by a tag and the change page's tags and attributes, for WorkflowInstanceAdmin."""

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        """`tag:<tag>` finds the instances with that tag; any other search also finds the
        instances with a tag equal to it, besides what the search fields match (each read by
        its index, unless both match)."""
        term = search_term.strip()
        if term.startswith(TAG_PREFIX):
            return _with_tag(queryset, term[len(TAG_PREFIX) :].strip()), False
        found, duplicates = super().get_search_results(request, queryset, search_term)
        if not term or len(term) > TAG_LENGTH:
            return found, duplicates
        # An OR of the tag's EXISTS with the search fields' matches reads every instance: the
        # tag's rows are looked up first (dw_tag_lookup), and most searches have none.
        if not InstanceTag.objects.using(queryset.db).filter(tag=term).exists():
            return found, duplicates
        tagged = _with_tag(queryset, term)
        return (found | tagged if found.exists() else tagged), duplicates

    @admin.display(description="tags")
    def tags_list(self, obj: WorkflowInstance) -> SafeString | str:
        tags = list(obj.tags.order_by("tag").values_list("tag", flat=True))
        if not tags:
            return "-"
        return format_html_join(
            " ",
            '<a class="dw-tag" href="{}"><code>{}</code></a>',
            ((changelist_url(WorkflowInstance, tag=tag), tag) for tag in tags),
        )

    @admin.display(description="search attributes")
    def attributes_table(self, obj: WorkflowInstance) -> SafeString | str:
        rows = obj.attributes.order_by("name").values_list(
            "name", "kind", "text", "number", "moment"
        )
        if not rows:
            return "-"
        cells = format_html_join(
            "",
            '<tr><th scope="row"><code>{}</code></th><td>{}</td><td class="dw-kind">{}</td></tr>',
            (
                (name, _shown(to_value(kind, text, number, moment)), kind)
                for name, kind, text, number, moment in rows
            ),
        )
        return format_html('<table class="dw-values">{}</table>', cells)


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value.isoformat() if hasattr(value, "isoformat") else str(value)
