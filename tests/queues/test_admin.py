"""The admin: the instance list filters by queue and shows it in a column; the instance page
shows it."""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.db import connection
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


def test_the_filter_offers_the_declared_queues_and_those_of_waiting_instances(admin_client, define):
    @define("admin-finished")
    def run(ctx, input):
        return 1

    wf.start("admin-finished", id="ran-1", queue="old-pool")
    wf.start("admin-finished", id="ran-3", queue="new-pool")
    wf.start("admin-finished", id="ran-2", queue="new-pool")
    wf.drain()  # they end: their rows leave the claim index
    wf.start("admin-finished", id="waits-2", queue="new-pool")
    html = admin_client.get(reverse(LIST)).content.decode()
    assert "?queue=new-pool" in html and "?queue=default" in html
    if connection.vendor == "mysql":  # every queue, by a loose scan of the queue's index
        assert "?queue=old-pool" in html
    else:  # no instance of it waits: the partial index does not hold it
        assert "?queue=old-pool" not in html
    assert listed(admin_client, queue="old-pool") == ["ran-1"]  # the URL works all the same
    html = admin_client.get(reverse(LIST), {"queue": "old-pool"}).content.decode()
    assert "?queue=old-pool" in html  # the chosen one is offered


def test_the_filter_is_left_out_while_every_instance_waits_in_default(admin_client, define):
    @define("admin-default")
    def run(ctx, input):
        return 1

    wf.start("admin-default", id="only-default")
    specs = admin_client.get(reverse(LIST)).context["cl"].filter_specs
    assert "queue" not in [spec.title for spec in specs]
    assert listed(admin_client, queue="default") == ["only-default"]  # the URL works
