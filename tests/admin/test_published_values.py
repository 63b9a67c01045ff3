"""The instance page shows the values the instance published (ctx.set_value())."""

from __future__ import annotations

import base64

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse

import django_workflows as wf
from django_workflows.codecs import AesGcmPayloadCodec

pytestmark = pytest.mark.django_db


def change_url(id: str) -> str:
    return reverse("admin:django_workflows_workflowinstance_change", args=[quote(id)])


@pytest.fixture
def publisher(define):
    @define("admin-publishes")
    def run(ctx, input):
        ctx.set_value("stage", "first")
        ctx.set_value("progress", {"done": 3, "of": 7})
        ctx.set_value("stage", "<b>packed</b>")
        ctx.wait_for_signal("go", "go", key="k")

    return run


def test_the_instance_page_shows_each_names_latest_value(admin_client, publisher):
    wf.start("admin-publishes", id="shown")
    wf.drain()
    html = admin_client.get(change_url("shown")).content.decode()
    assert "published values" in html.lower()
    assert '<th scope="row"><code>stage</code></th>' in html
    assert "&lt;b&gt;packed&lt;/b&gt;" in html  # escaped, and the latest
    assert "<b>packed</b>" not in html
    assert "&quot;done&quot;: 3" in html
    assert "first" not in html.split('class="dw-values"')[1].split("</table>")[0]


def test_the_timeline_and_the_journal_name_each_value_they_show(admin_client, publisher):
    wf.start("admin-publishes", id="named")
    wf.drain()
    response = admin_client.get(change_url("named"))
    labels = [row.name for row in response.context["timeline"].rows]
    assert labels[:3] == ["$value:0 (stage)", "$value:1 (progress)", "$value:2 (stage)"]
    assert [row["name"] for row in response.context["journal"]][:3] == labels[:3]


def test_an_instance_without_values_shows_a_dash(admin_client, define):
    @define("admin-publishes-nothing")
    def run(ctx, input):
        return None

    wf.start("admin-publishes-nothing", id="none")
    wf.drain()
    response = admin_client.get(change_url("none"))
    assert response.status_code == 200
    assert 'class="dw-values"' not in response.content.decode()


def test_a_value_the_codec_cannot_read_is_shown_as_unreadable(admin_client, publisher, settings):
    key = base64.b64encode(b"K" * 32).decode()
    settings.DJANGO_WORKFLOWS = {"CODEC": AesGcmPayloadCodec(keys={"2026-12": key})}
    wf.start("admin-publishes", id="sealed")
    wf.drain()
    other = base64.b64encode(b"O" * 32).decode()
    settings.DJANGO_WORKFLOWS = {"CODEC": AesGcmPayloadCodec(keys={"2027-01": other})}
    response = admin_client.get(change_url("sealed"))
    assert response.status_code == 200
    values = response.content.decode().split('class="dw-values"')[1].split("</table>")[0]
    assert "unreadable" in values and "packed" not in values
