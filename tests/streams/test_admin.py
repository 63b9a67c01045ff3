"""The instance page shows its streams: name, items, closed, the last few items."""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse

import django_workflows as wf

pytestmark = pytest.mark.django_db


def change_url(id: str) -> str:
    return reverse("admin:django_workflows_workflowinstance_change", args=[quote(id)])


def test_the_instance_page_shows_its_streams_and_their_last_items(admin_client, define):
    @define("admin-streams")
    def run(ctx, input):
        lines = ctx.stream("lines")
        for n in range(7):
            lines.write({"line": f"<b>line {n}</b>"})
        lines.close()
        ctx.step("talk", lambda step: step.stream("tokens").write("hi"))
        return 1

    wf.start("admin-streams", id="shown")
    wf.drain()
    html = admin_client.get(change_url("shown")).content.decode()
    assert "<code>lines</code>: 7 items, closed (the last 5)" in html
    assert "<code>tokens</code>: 1 item, open" in html
    assert "line 6" in html and "line 2" in html and "line 1" not in html
    assert "&lt;b&gt;line 6&lt;/b&gt;" in html and "<b>line 6</b>" not in html


def test_an_instance_without_streams_shows_none(admin_client, define):
    @define("admin-no-streams")
    def run(ctx, input):
        return 1

    wf.start("admin-no-streams", id="quiet")
    wf.drain()
    html = admin_client.get(change_url("quiet")).content.decode()
    assert "dw-stream" not in html
