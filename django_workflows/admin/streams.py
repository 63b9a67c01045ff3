"""An instance's streams on its change page: each one's name, items, whether it is closed, and
its last items."""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from ..models import WorkflowInstance
from ..store import streams
from .display import decoded, pretty_json

SHOWN = 5
"""How many of a stream's last items the page shows."""


class StreamsAdmin(admin.ModelAdmin):
    """The change page's streams, for WorkflowInstanceAdmin."""

    @admin.display(description="streams")
    def streams_table(self, obj: WorkflowInstance) -> SafeString | str:
        found = streams.latest(obj._state.db or "default", obj.pk, SHOWN)
        if not found:
            return "-"
        blocks = []
        for name, items, closed, last in found:
            rows = format_html_join(
                "",
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                (
                    (
                        offset,
                        "-" if attempt is None else attempt,
                        at.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3],
                        pretty_json(decoded("value", value, streams.item_at(obj.pk, name, offset))),
                    )
                    for offset, value, attempt, at in last
                ),
            )
            blocks.append(
                format_html(
                    '<div class="dw-stream"><p><code>{}</code>: {} item{}, {}{}</p>'
                    '<table class="dw-stream-items"><thead><tr><th scope="col">offset</th>'
                    '<th scope="col">attempt</th><th scope="col">written</th>'
                    '<th scope="col">value</th></tr></thead><tbody>{}</tbody></table></div>',
                    name,
                    items,
                    "" if items == 1 else "s",
                    "closed" if closed else "open",
                    f" (the last {len(last)})" if items > len(last) else "",
                    rows,
                )
            )
        return format_html_join("", "{}", ((block,) for block in blocks))
