"""The admin: the instance list filters by queue and shows it in a column; the instance page
shows it."""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse

import django_workflows as wf

pytestmark = pytest.mark.django_db

LIST = "admin:django_workflows_workflowinstance_changelist"


@pytest.fixture
def queued(define):
    @define("admin-queued", queue="gpu")
    def run(ctx, input):
        return 1

    wf.start("admin-queued", id="render-1")
    wf.start("admin-queued", id="render-2")
    wf.start("admin-queued", id="crm-1", queue="slow-api")


def listed(client, **query) -> list[str]:
    response = client.get(reverse(LIST), query)
    assert response.status_code == 200
    return sorted(row.pk for row in response.context["cl"].result_list)


def test_the_instance_list_filters_by_queue(admin_client, queued):
    html = admin_client.get(reverse(LIST)).content.decode()
    assert "By queue" in html
    assert "?queue=gpu" in html and "?queue=slow-api" in html
    assert listed(admin_client, queue="gpu") == ["render-1", "render-2"]
    assert listed(admin_client, queue="slow-api") == ["crm-1"]
    assert listed(admin_client, queue="default") == []


def test_the_instance_list_and_page_show_the_queue(admin_client, queued):
    response = admin_client.get(reverse(LIST))
    assert "column-queue" in response.content.decode()
    url = reverse("admin:django_workflows_workflowinstance_change", args=[quote("crm-1")])
    html = admin_client.get(url).content.decode()
    assert "field-queue" in html
    assert "slow-api" in html
