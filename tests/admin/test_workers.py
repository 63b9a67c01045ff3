"""The registry of worker processes in the admin: read-only, live first, each queue's backlog
above the list with a warning row for a queue whose due instances no live worker claims, and
a link from a queue to its instances."""

from __future__ import annotations

import pytest
from django.urls import reverse

import django_workflows as wf
from django_workflows.models import WorkerProcess
from tests.workers.helpers import register

pytestmark = pytest.mark.django_db

URL = "admin:django_workflows_workerprocess_changelist"


def test_the_workers_page_lists_live_workers_first_with_their_state(admin_client, workflow_clock):
    register("gone-worker", heartbeat=1.0)
    workflow_clock.advance("10s")
    register("live-worker", queues=["default", "gpu"], heartbeat=5.0)
    response = admin_client.get(reverse(URL))
    assert response.status_code == 200
    rows = [w.id for w in response.context["cl"].result_list]
    assert rows == ["live-worker", "gone-worker"]
    page = response.content.decode()
    assert '<td class="field-state">live</td>' in page
    assert '<td class="field-state">gone</td>' in page
    assert '<td class="field-queue_list">default, gpu</td>' in page
    assert '<td class="field-queue_list">every queue</td>' in page
    assert '<td class="field-running_of">0 / 4</td>' in page
    only_gone = admin_client.get(reverse(URL), {"state": "gone"})
    assert [w.id for w in only_gone.context["cl"].result_list] == ["gone-worker"]


def test_a_queue_with_a_backlog_and_no_live_worker_is_a_warning_row(admin_client, workflow_clock):
    wf.start("flaky", {}, id="a-1")
    wf.start("flaky", {}, id="g-1", queue="gpu")
    wf.start("flaky", {}, id="g-2", queue="gpu")
    workflow_clock.advance("90s")
    register("cpu", queues=["default"])
    page = admin_client.get(reverse(URL)).content.decode()
    instances = reverse("admin:django_workflows_workflowinstance_changelist")
    assert f'<a href="{instances}?queue=gpu">gpu</a>' in page
    assert f'<a href="{instances}?queue=default">default</a>' in page
    assert page.count('class="workflow-queue-alert"') == 1
    assert "Warning: 2 due instances that no live worker claims." in page
    assert "<p>1 live worker. A worker is gone once" in page
    assert "(1\xa0minute ago)" in page  # by the workflow clock
    # The link lists that queue's instances.
    response = admin_client.get(instances, {"queue": "gpu"})
    assert sorted(i.id for i in response.context["cl"].result_list) == ["g-1", "g-2"]


def test_nothing_due_says_so(admin_client, workflow_clock):
    page = admin_client.get(reverse(URL)).content.decode()
    assert "Nothing is due: no queue has a backlog." in page
    assert "<p>0 live workers. A worker is gone once" in page
    assert "workflow-queue-alert" not in page


def test_workers_cannot_be_added_or_changed_and_only_gone_ones_deleted(
    admin_client, workflow_clock
):
    register("gone-worker", heartbeat=1.0)
    workflow_clock.advance("10s")
    register("live-worker")
    assert admin_client.get(reverse("admin:django_workflows_workerprocess_add")).status_code == 403
    detail = admin_client.get(
        reverse("admin:django_workflows_workerprocess_change", args=["live-worker"])
    )
    assert detail.status_code == 200 and "Save" not in detail.content.decode()

    def delete(id: str) -> int:
        url = reverse("admin:django_workflows_workerprocess_delete", args=[id])
        return admin_client.post(url, {"post": "yes"}).status_code

    assert delete("live-worker") == 403
    assert delete("gone-worker") == 302
    assert list(WorkerProcess.objects.values_list("id", flat=True)) == ["live-worker"]
    listing = admin_client.get(reverse(URL)).content.decode()
    assert "delete_selected" not in listing
