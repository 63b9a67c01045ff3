"""The instance page shows a failed step's traceback collapsed under its error, and its
step.log lines under the step, in the timeline and in the journal table, read through the
codec."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse

import django_workflows as wf

pytestmark = pytest.mark.django_db


def change_page(client, id: str) -> str:
    response = client.get(
        reverse("admin:django_workflows_workflowinstance_change", args=[quote(id)])
    )
    assert response.status_code == 200
    return response.content.decode()


def section(html: str, start: str, end: str) -> str:
    return html[html.index(start) : html.index(end, html.index(start))]


def test_the_traceback_and_log_lines_show_under_the_step(
    admin_client, with_codec, workflow_clock, failing
):
    wf.start("steplogs-failing", None, id="shown")
    wf.drain()
    html = change_page(admin_client, "shown")
    timeline = section(html, 'id="journal-timeline"', "</fieldset>")
    table = section(html, 'id="journal-table"', "</fieldset>")
    for part in (timeline, table):
        (block,) = re.findall(
            r'<details class="dw-traceback"><summary>Traceback</summary><pre>(.*?)</pre>',
            part,
            re.S,
        )
        assert block.startswith("Traceback (most recent call last):")
        assert "in raise_from_deep" in block
        assert "ValueError: card declined for 42" in block
        assert '<strong class="dw-error-name">ValueError</strong>: card declined for 42' in part
        assert "<summary>Log of attempt 2: 1 line</summary>" in part
        assert '<span class="dw-log-level">INFO</span> charging 42</li>' in part
    # The instance's error: the step's traceback, collapsed, and not as one JSON string.
    error = section(html, "field-error_summary", "</fieldset>")
    assert '<details class="dw-traceback"><summary>Traceback</summary>' in error
    assert "&quot;traceback&quot;" not in error


def test_log_lines_are_escaped_and_the_dropped_ones_counted(
    admin_client, no_codec, workflow_clock, define
):
    @define("steplogs-markup")
    def run(ctx, input):
        def markup(step):
            for i in range(52):
                step.log.warning("<b>line %d</b>", i)

        ctx.step("markup", markup)

    wf.start("steplogs-markup", None, id="markup")
    wf.drain()
    table = section(change_page(admin_client, "markup"), 'id="journal-table"', "</fieldset>")
    assert "<b>line" not in table
    assert "&lt;b&gt;line 49&lt;/b&gt;" in table
    assert '<li class="dw-log-dropped">2 more lines not kept</li>' in table
    assert "dw-traceback" not in table  # it did not fail
