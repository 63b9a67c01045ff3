"""The admin's "Rerun from a step": its own permission, a page that lists the instance's steps,
the fork, and the links between the fork and its original."""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.contrib.messages import get_messages
from django.urls import reverse

import django_workflows as wf
from django_workflows.models import WorkflowInstance
from tests.admin.conftest import staff_user

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:django_workflows_workflowinstance_changelist")


def change_url(id: str) -> str:
    return reverse("admin:django_workflows_workflowinstance_change", args=[quote(id)])


def button_url(id: str) -> str:
    return reverse("admin:django_workflows_workflowinstance_fork", args=[quote(id)])


def offered(client) -> list[str]:
    return [
        name for name, _ in client.get(CHANGELIST).context["action_form"].fields["action"].choices
    ]


def test_the_action_lists_the_steps_then_forks_and_shows_the_new_instance(
    admin_client, failed_order, runs
):
    page = admin_client.post(CHANGELIST, {"action": "fork", "_selected_action": [failed_order]})
    assert page.status_code == 200
    assert page.context["steps"] == ["charge", "pack", "ship"]
    assert b'value="ship"' in page.content
    response = admin_client.post(
        CHANGELIST,
        {"action": "fork", "_selected_action": [failed_order], "post": "yes", "from_step": "ship"},
    )
    [fork] = WorkflowInstance.objects.filter(forked_from=failed_order)
    assert response.status_code == 302 and response.url == change_url(fork.id)
    [message] = [str(m) for m in get_messages(response.wsgi_request)]
    assert message == (
        f'Forked order-1 from step "ship" as {fork.id}: a worker reruns that step and what follows.'
    )
    wf.drain()
    assert wf.get_status(fork.id).status == "completed"
    assert (runs["charge"], runs["pack"], runs["ship"]) == (1, 1, 2)

    new_page = admin_client.get(change_url(fork.id)).content.decode()
    assert f'Forked from <a href="{change_url(failed_order)}">order-1</a>' in new_page
    assert "rerun from step <code>ship</code>" in new_page
    original = admin_client.get(change_url(failed_order)).content.decode()
    assert f'<a href="{change_url(fork.id)}">{fork.id}</a>' in original


def test_the_instance_page_offers_the_button(admin_client, failed_order):
    page = admin_client.get(change_url(failed_order))
    assert "fork" in [b["name"] for b in page.context["workflow_actions"]]
    chooser = admin_client.post(button_url(failed_order))
    assert chooser.status_code == 200 and chooser.context["steps"] == ["charge", "pack", "ship"]
    response = admin_client.post(
        button_url(failed_order),
        {"action": "fork", "_selected_action": [failed_order], "post": "yes", "from_step": "pack"},
    )
    [fork] = WorkflowInstance.objects.filter(forked_from=failed_order)
    assert response.status_code == 302 and response.url == change_url(fork.id)


def test_a_step_must_be_chosen(admin_client, failed_order):
    page = admin_client.post(
        CHANGELIST,
        {"action": "fork", "_selected_action": [failed_order], "post": "yes", "from_step": "nope"},
    )
    assert page.status_code == 200 and page.context["form"].errors
    assert not WorkflowInstance.objects.filter(forked_from=failed_order).exists()


def test_one_instance_at_a_time(admin_client, failed_order):
    wf.start("shipping", {"order": "o-3", "total": 1}, id="order-3")
    response = admin_client.post(
        CHANGELIST, {"action": "fork", "_selected_action": [failed_order, "order-3"]}, follow=True
    )
    messages = [str(m) for m in response.context["messages"]]
    assert messages == ["Rerun from a step takes one instance at a time."]


def test_an_instance_without_steps_is_refused(admin_client, failed_order):
    wf.start("shipping", {"order": "o-4", "total": 1}, id="order-4")  # not run yet
    response = admin_client.post(
        CHANGELIST, {"action": "fork", "_selected_action": ["order-4"]}, follow=True
    )
    messages = [str(m) for m in response.context["messages"]]
    assert messages == ["Refused: order-4 has no step in its journal yet."]
    page = admin_client.get(change_url("order-4"))
    assert "fork" not in [b["name"] for b in page.context["workflow_actions"]]


def test_the_action_needs_its_own_permission(client, failed_order):
    client.force_login(staff_user("support", "retry_workflowinstance", "cancel_workflowinstance"))
    assert "fork" not in offered(client)
    page = client.get(change_url(failed_order))
    assert "fork" not in [b["name"] for b in page.context["workflow_actions"]]
    assert client.post(button_url(failed_order)).status_code == 403
    assert not WorkflowInstance.objects.filter(forked_from=failed_order).exists()
    client.force_login(staff_user("ops", "fork_workflowinstance"))
    assert "fork" in offered(client)
    response = client.post(
        CHANGELIST,
        {"action": "fork", "_selected_action": [failed_order], "post": "yes", "from_step": "ship"},
    )
    assert response.status_code == 302
    assert WorkflowInstance.objects.filter(forked_from=failed_order).count() == 1
