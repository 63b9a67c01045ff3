"""django_workflows.metrics.view: the database's gauges in Prometheus' text format, for staff
users and the METRICS_TOKEN bearer; 403 for anyone else, 401 for a wrong token."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

import django_workflows as wf
from django_workflows import clock
from django_workflows.models import WorkflowInstance
from tests.workers.helpers import register

pytestmark = pytest.mark.django_db

URL = "/workflows/metrics/"
TOKEN = "scrape-me-please-0123456789"


@pytest.fixture
def token(settings):
    settings.DJANGO_WORKFLOWS = {
        **(getattr(settings, "DJANGO_WORKFLOWS", None) or {}),
        "METRICS_TOKEN": TOKEN,
    }
    return TOKEN


def samples(response) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    found = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def at(found, name: str, **labels: str) -> float:
    return found[(name, tuple(sorted(labels.items())))]


def test_the_gauges_count_instances_backlog_oldest_due_and_live_workers(client, define, token):
    @define("gauge-order", queue="orders")
    def run(ctx, input):
        return "done"

    @define("gauge-mail", queue="mail")
    def mail(ctx, input):
        return "sent"

    for n in range(3):
        wf.start("gauge-order", None, id=f"gauge-order-{n}")
    wf.start("gauge-mail", None, id="gauge-mail-0")
    wf.start("gauge-mail", None, id="gauge-mail-1")
    WorkflowInstance.objects.filter(pk="gauge-mail-1").update(  # not due
        wake_at=clock.now() + timedelta(hours=1)
    )
    # The oldest due order has waited 90 seconds.
    WorkflowInstance.objects.filter(pk="gauge-order-0").update(
        wake_at=clock.now() - timedelta(seconds=90)
    )
    wf.start("gauge-order", None, id="gauge-order-done")
    WorkflowInstance.objects.filter(pk="gauge-order-done").update(  # as its end leaves it
        status="completed", wake_at=None
    )
    register("w-every")  # claims every queue
    register("w-mail", queues=["mail"])
    register("w-gone", queues=["orders"], seen=clock.now() - timedelta(hours=1))

    found = samples(client.get(URL, HTTP_AUTHORIZATION=f"Bearer {token}"))
    assert at(found, "django_workflows_instances", status="pending", workflow="gauge-order") == 3
    assert at(found, "django_workflows_instances", status="completed", workflow="gauge-order") == 1
    assert at(found, "django_workflows_instances", status="pending", workflow="gauge-mail") == 2
    assert at(found, "django_workflows_backlog", queue="orders") == 3
    assert at(found, "django_workflows_backlog", queue="mail") == 1
    assert 89 <= at(found, "django_workflows_oldest_due_seconds", queue="orders") < 150
    assert at(found, "django_workflows_oldest_due_seconds", queue="mail") < 60
    assert at(found, "django_workflows_workers_live", queue="orders") == 1
    assert at(found, "django_workflows_workers_live", queue="mail") == 2


def test_an_idle_queue_reads_zero(client, define, token):
    @define("gauge-idle", queue="idle")
    def run(ctx, input):
        return "done"

    found = samples(client.get(URL, HTTP_AUTHORIZATION=f"Bearer {token}"))
    assert at(found, "django_workflows_backlog", queue="idle") == 0
    assert at(found, "django_workflows_oldest_due_seconds", queue="idle") == 0
    assert at(found, "django_workflows_workers_live", queue="idle") == 0


def test_a_staff_user_reads_them(client):
    client.force_login(User.objects.create_user("ops", is_staff=True))
    samples(client.get(URL))


def test_anyone_else_is_refused(client, token):
    assert client.get(URL).status_code == 403
    client.force_login(User.objects.create_user("customer"))
    assert client.get(URL).status_code == 403
    wrong = client.get(URL, HTTP_AUTHORIZATION="Bearer not-the-token")
    assert wrong.status_code == 401
    assert wrong["WWW-Authenticate"].startswith("Bearer")
    assert client.get(URL, HTTP_AUTHORIZATION=f"Basic {token}").status_code == 403


def test_no_token_lets_no_bearer_in(client):
    assert client.get(URL, HTTP_AUTHORIZATION="Bearer ").status_code == 401
    assert client.get(URL, HTTP_AUTHORIZATION="Bearer anything").status_code == 401


def test_it_reads_only(client, token):
    response = client.post(URL, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 405


def test_the_admins_workers_page_links_the_view_while_metrics_is_on(admin_client, settings):
    page = reverse("admin:django_workflows_workerprocess_changelist")
    link = f'href="{reverse("django_workflows:metrics")}"'
    assert link not in admin_client.get(page).content.decode()
    settings.DJANGO_WORKFLOWS = {"METRICS": True}
    assert link in admin_client.get(page).content.decode()
