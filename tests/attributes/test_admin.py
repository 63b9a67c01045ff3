"""The admin: the tag filter on the instance list, search by a tag, and the tags and search
attributes on the instance page."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse

import django_workflows as wf

pytestmark = pytest.mark.django_db

LIST = "admin:django_workflows_workflowinstance_changelist"


@pytest.fixture
def shown(define):
    @define("admin-tagged", tags=["shop"])
    def run(ctx, input):
        return 1

    wf.start("admin-tagged", id="express-1", tags=["express"], attributes={"total": 2499})
    wf.start(
        "admin-tagged",
        id="slow-1",
        tags=["<b>slow</b>"],
        attributes={"tier": "<i>pro</i>", "vip": True, "at": datetime(2026, 12, 1, tzinfo=UTC)},
    )
    wf.start("admin-tagged", id="plain-1")


def listed(client, **query) -> list[str]:
    response = client.get(reverse(LIST), query)
    assert response.status_code == 200
    return sorted(row.pk for row in response.context["cl"].result_list)


def test_the_tag_filter_lists_the_tags_and_filters_by_one(admin_client, shown):
    response = admin_client.get(reverse(LIST))
    html = response.content.decode()
    assert "By tag" in html
    assert "?tag=express" in html and "?tag=shop" in html  # a recent one, a static one
    assert listed(admin_client, tag="express") == ["express-1"]
    assert listed(admin_client, tag="shop") == ["express-1", "plain-1", "slow-1"]
    assert listed(admin_client, tag="unknown") == []


def test_search_finds_instances_by_a_tag(admin_client, shown):
    assert listed(admin_client, q="express") == ["express-1"]  # the tag
    assert listed(admin_client, q="tag:shop") == ["express-1", "plain-1", "slow-1"]
    assert listed(admin_client, q="plain-1") == ["plain-1"]  # the id still works
    assert listed(admin_client, q="tag:nothing") == []


def test_the_instance_page_shows_the_tags_and_attributes_escaped(admin_client, shown):
    url = reverse("admin:django_workflows_workflowinstance_change", args=[quote("slow-1")])
    html = admin_client.get(url).content.decode()
    assert "Tags and search attributes" in html
    assert "<code>&lt;b&gt;slow&lt;/b&gt;</code>" in html
    assert "<b>slow</b>" not in html
    assert "&lt;i&gt;pro&lt;/i&gt;" in html
    assert '<th scope="row"><code>vip</code></th><td>true</td>' in html
    assert "2026-12-01T00:00:00+00:00" in html
    plain = reverse("admin:django_workflows_workflowinstance_change", args=[quote("plain-1")])
    assert admin_client.get(plain).status_code == 200
