"""The admin's Resume action: its own permission; resumes instances at a breakpoint, skips the
others and says why, as the other actions report."""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse

import django_workflows as wf
from tests.admin.conftest import staff_user
from tests.admin.test_actions import CHANGELIST, act, change_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def gated(define, workflow_clock):
    @define("gated")
    def gated(ctx, input):
        ctx.breakpoint("manager-approval")
        return "approved"

    @define("plain-wait")
    def plain_wait(ctx, input):
        return ctx.wait_for_signal("wait", "never")

    wf.start("gated", id="refund-1")
    wf.start("gated", id="refund-2")
    wf.start("plain-wait", id="waiting")
    return gated


def test_resume_continues_instances_at_a_breakpoint_and_skips_the_others(admin_client, gated):
    wf.drain()
    wf.resume("refund-2")
    wf.drain()  # refund-2 completed
    [message] = act(admin_client, "resume", "refund-1", "refund-2", "waiting")
    assert message == (
        "Resumed 1 instance. Refused 2: refund-2 is completed: it waits at no breakpoint. "
        "waiting is not waiting at a breakpoint."
    )
    wf.drain()
    assert wf.get_status("refund-1").output == "approved"
    assert wf.get_status("waiting").status == "suspended"


def test_the_change_page_offers_resume_only_at_a_breakpoint(admin_client, gated):
    wf.drain()
    page = admin_client.get(change_url("refund-1"))
    assert "resume" in [b["name"] for b in page.context["workflow_actions"]]
    page = admin_client.get(change_url("waiting"))
    assert "resume" not in [b["name"] for b in page.context["workflow_actions"]]
    url = reverse("admin:django_workflows_workflowinstance_resume", args=[quote("refund-1")])
    response = admin_client.post(url, follow=True)
    assert [str(m) for m in response.context["messages"]] == ["Resumed 1 instance."]
    wf.drain()
    assert wf.get_status("refund-1").status == "completed"


def test_resume_needs_its_own_permission(client, gated):
    wf.drain()
    client.force_login(staff_user("support", "cancel_workflowinstance"))
    offered = [
        name for name, _ in client.get(CHANGELIST).context["action_form"].fields["action"].choices
    ]
    assert "resume" not in offered
    url = reverse("admin:django_workflows_workflowinstance_resume", args=[quote("refund-1")])
    assert client.post(url).status_code == 403
    wf.drain()
    assert wf.get_status("refund-1").status == "suspended"
    client.force_login(staff_user("manager", "resume_workflowinstance"))
    [message] = act(client, "resume", "refund-1")
    assert message == "Resumed 1 instance."
