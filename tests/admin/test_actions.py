"""The actions: each calls the client per row, skips ineligible rows and says why."""

from __future__ import annotations

import re

from django.contrib.admin.utils import quote
from django.contrib.messages import get_messages
from django.urls import reverse

import django_workflows as wf
from django_workflows.models import WorkflowInstance
from django_workflows.store import payloads

from .conftest import order, staff_user

CHANGELIST = reverse("admin:django_workflows_workflowinstance_changelist")


def act(client, action: str, *ids: str, confirm: bool = False) -> list[str]:
    """Run an action on the changelist and return its messages; `confirm` answers the
    confirmation page of an action that asks for one."""
    data = {"action": action, "_selected_action": list(ids)}
    if confirm:
        data["post"] = "yes"
    response = client.post(CHANGELIST, data, follow=True)
    assert response.status_code == 200
    return [str(m) for m in get_messages(response.wsgi_request)] or [
        str(m) for m in response.context["messages"]
    ]


def status(id: str) -> str | None:
    found = wf.get_status(id)
    return None if found is None else found.status


def change_url(id: str) -> str:
    return reverse("admin:django_workflows_workflowinstance_change", args=[quote(id)])


def test_retry_retries_failed_instances_and_refuses_the_others(admin_client, instances, world):
    [message] = act(admin_client, "retry", "declined", "paid", "order-no-stock")
    assert message == (
        "Retried 1 instance. Refused 2: order-no-stock ran its compensations: resuming it would "
        "build on undone work. Start a new instance instead. paid is completed: only failed and "
        "compensation_failed instances can be retried."
    )
    assert status("declined") == "pending"
    assert status("paid") == "completed"


def test_cancel_cancels_unfinished_instances(admin_client, instances, world):
    [message] = act(admin_client, "cancel", "order-waiting", "paid", confirm=True)
    assert message == (
        "Cancel requested for 1 instance; a worker applies it. Refused 1: paid is completed: "
        "only unfinished instances can be cancelled."
    )
    row = payloads.decode_instance(WorkflowInstance.objects.get(id="order-waiting"))
    assert row.cancel_requested and row.cancel_reason == "Cancelled in the admin by admin."
    wf.drain()
    assert status("order-waiting") == "cancelled"
    assert "order-waiting:$compensate:charge-payment" in world.refunds  # compensations ran


def test_cancel_refuses_an_instance_being_cancelled(admin_client, instances):
    wf.cancel("order-waiting", "by the customer")
    [message] = act(admin_client, "cancel", "order-waiting", confirm=True)
    assert message == (
        "Cancel requested for 0 instances. Refused 1: order-waiting is being cancelled already."
    )


def test_terminate_stops_an_instance_without_compensations(admin_client, instances, world):
    [message] = act(admin_client, "terminate", "order-waiting", "declined", confirm=True)
    assert message.startswith(
        "Terminate requested for 1 instance; a worker applies it. Refused 1: declined is failed"
    )
    wf.drain()
    ended = wf.get_status("order-waiting")
    assert ended.status == "cancelled" and ended.error["name"] == "WorkflowTerminatedError"
    assert ended.error["message"] == "Terminated in the admin by admin."
    assert not [key for key in world.refunds if key.startswith("order-waiting")]


def test_delete_deletes_finished_instances_only(admin_client, instances):
    [message] = act(admin_client, "delete", "paid", "declined", "order-waiting")
    assert message == (
        "Deleted 2 instances. Refused 1: order-waiting is suspended: delete an unfinished "
        "instance with force delete."
    )
    assert status("paid") is None and status("declined") is None
    assert status("order-waiting") == "suspended"


def test_force_delete_deletes_unfinished_instances_too(admin_client, instances):
    [message] = act(admin_client, "force_delete", "order-waiting", "paid", confirm=True)
    assert message == "Deleted 2 instances."
    assert not WorkflowInstance.objects.filter(id__in=["order-waiting", "paid"]).exists()


def test_django_bulk_delete_is_not_offered(admin_client, instances):
    response = admin_client.get(CHANGELIST)
    offered = [name for name, _ in response.context["action_form"].fields["action"].choices]
    assert offered == [
        "",
        "cancel",
        "terminate",
        "retry",
        "resume",
        "fork",
        "delete",
        "force_delete",
    ]


def test_a_staff_user_without_the_retry_permission_is_not_offered_retry(support_client, instances):
    response = support_client.get(CHANGELIST)
    offered = [name for name, _ in response.context["action_form"].fields["action"].choices]
    assert offered == ["", "cancel"]
    response = support_client.post(
        CHANGELIST, {"action": "retry", "_selected_action": ["declined"]}, follow=True
    )
    assert status("declined") == "failed"
    page = support_client.get(
        reverse("admin:django_workflows_workflowinstance_change", args=["declined"])
    )
    assert [b["name"] for b in page.context["workflow_actions"]] == []  # a failed one: no cancel


def test_each_permission_offers_its_own_action(client, instances):
    for codename, actions in [
        ("cancel_workflowinstance", ["cancel"]),
        ("terminate_workflowinstance", ["terminate"]),
        ("retry_workflowinstance", ["retry"]),
        ("resume_workflowinstance", ["resume"]),
        ("delete_workflowinstance", ["delete", "force_delete"]),
    ]:
        client.force_login(staff_user(f"only-{codename}", codename))
        response = client.get(CHANGELIST)
        offered = [name for name, _ in response.context["action_form"].fields["action"].choices]
        assert offered == ["", *actions], codename


def test_the_change_page_offers_the_actions_that_apply_as_buttons(admin_client, instances):
    url = reverse("admin:django_workflows_workflowinstance_change", args=["declined"])
    page = admin_client.get(url)
    assert [b["name"] for b in page.context["workflow_actions"]] == [
        "retry",
        "fork",
        "delete",
        "force_delete",
    ]
    retry = page.context["workflow_actions"][0]["url"]
    assert admin_client.get(retry).status_code == 405
    response = admin_client.post(retry, follow=True)
    assert response.redirect_chain[-1][0] == url
    assert [str(m) for m in response.context["messages"]] == ["Retried 1 instance."]
    assert status("declined") == "pending"


def test_a_button_refuses_a_user_without_its_permission(support_client, instances):
    url = reverse("admin:django_workflows_workflowinstance_retry", args=[quote("declined")])
    assert support_client.post(url).status_code == 403
    assert status("declined") == "failed"


def test_the_delete_button_returns_to_the_list(admin_client, instances):
    url = reverse("admin:django_workflows_workflowinstance_delete", args=[quote("paid")])
    response = admin_client.post(url, follow=True)
    assert response.redirect_chain[-1][0] == CHANGELIST
    assert [str(m) for m in response.context["messages"]] == ["Deleted 1 instance."]


def test_cancel_says_each_request_waits_for_a_worker(admin_client, instances):
    wf.start("order-fulfilment", order("second"), id="order-second")
    wf.drain()
    [message] = act(admin_client, "cancel", "order-waiting", "order-second", confirm=True)
    assert message == "Cancel requested for 2 instances; a worker applies them."
    assert status("order-waiting") == status("order-second") == "suspended"  # until a worker


def test_terminate_shows_a_confirmation_page_and_changes_nothing(admin_client, instances):
    response = admin_client.post(
        CHANGELIST, {"action": "terminate", "_selected_action": ["order-waiting", "declined"]}
    )
    assert response.status_code == 200
    assert response.templates[0].name == "django_workflows/admin/action_confirmation.html"
    html = response.content.decode()
    assert "Terminate 2 selected instances?" in html
    assert f'href="{change_url("order-waiting")}">order-waiting</a>' in html
    assert "declined is failed: only unfinished instances can be terminated." in html
    assert '<input type="hidden" name="post" value="yes">' in html
    assert html.count('name="_selected_action"') == 2
    row = WorkflowInstance.objects.get(id="order-waiting")
    assert not row.terminate_requested and not row.cancel_requested
    assert not [str(m) for m in response.context["messages"]]


def test_cancel_shows_a_confirmation_page_naming_the_compensations_it_runs(
    admin_client, instances, world
):
    response = admin_client.post(
        CHANGELIST, {"action": "cancel", "_selected_action": ["order-waiting", "paid"]}
    )
    assert response.status_code == 200
    assert response.templates[0].name == "django_workflows/admin/action_confirmation.html"
    html = response.content.decode()
    assert "Cancel 2 selected instances?" in html
    # The completed steps with a compensation, latest first: the order the undo runs them in.
    assert "Runs 2 compensations: undo reserve-stock, then undo charge-payment." in html
    assert "paid is completed: only unfinished instances can be cancelled." in html
    assert '<input type="submit" value="Yes, cancel">' in html
    row = WorkflowInstance.objects.get(id="order-waiting")
    assert not row.cancel_requested and not row.terminate_requested
    assert not [key for key in world.refunds if key.startswith("order-waiting")]


def test_cancel_after_a_commit_point_says_no_compensation_runs(admin_client, instances):
    wf.signal("shipment.delivered", {"trackingNumber": "T1"}, key="waiting")
    wf.drain()  # past ctx.commit("delivered"), asleep before the review request
    html = admin_client.post(
        CHANGELIST, {"action": "cancel", "_selected_action": ["order-waiting"]}
    ).content.decode()
    assert "Runs no compensation: none is registered since its last commit point." in html


def test_cancel_of_an_instance_whose_code_is_not_registered_says_it_cannot_tell(
    admin_client, instances
):
    WorkflowInstance.objects.filter(id="order-waiting").update(version=7)
    html = admin_client.post(
        CHANGELIST, {"action": "cancel", "_selected_action": ["order-waiting"]}
    ).content.decode()
    assert "Its compensations cannot be listed: order-fulfilment@7 is not registered" in html


def test_cancel_acts_once_confirmed(admin_client, instances, world):
    [message] = act(admin_client, "cancel", "order-waiting", confirm=True)
    assert message == "Cancel requested for 1 instance; a worker applies it."
    assert WorkflowInstance.objects.get(id="order-waiting").cancel_requested


def test_the_cancel_button_asks_for_confirmation_first(admin_client, instances, world):
    url = reverse("admin:django_workflows_workflowinstance_cancel", args=["order-waiting"])
    page = admin_client.post(url).content.decode()
    assert "Cancel 1 selected instance?" in page
    assert "undo reserve-stock, then undo charge-payment" in page
    assert f'<a href="{change_url("order-waiting")}" class="button cancel-link">' in page
    assert not WorkflowInstance.objects.get(id="order-waiting").cancel_requested
    response = admin_client.post(url, {"post": "yes"}, follow=True)
    assert response.redirect_chain[-1][0] == change_url("order-waiting")
    assert [str(m) for m in response.context["messages"]] == [
        "Cancel requested for 1 instance; a worker applies it."
    ]
    assert WorkflowInstance.objects.get(id="order-waiting").cancel_requested


def test_terminate_acts_once_confirmed(admin_client, instances):
    [message] = act(admin_client, "terminate", "order-waiting", confirm=True)
    assert message == "Terminate requested for 1 instance; a worker applies it."
    assert WorkflowInstance.objects.get(id="order-waiting").terminate_requested


def test_force_delete_shows_a_confirmation_page_and_deletes_nothing(admin_client, instances):
    response = admin_client.post(
        CHANGELIST, {"action": "force_delete", "_selected_action": ["order-waiting", "paid"]}
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "Force delete 2 selected instances?" in html
    assert "without running its compensations" in html
    assert status("order-waiting") == "suspended" and status("paid") == "completed"


def test_the_terminate_button_asks_for_confirmation_first(admin_client, instances):
    url = reverse("admin:django_workflows_workflowinstance_terminate", args=["order-waiting"])
    page = admin_client.post(url)
    assert page.status_code == 200
    assert "Terminate 1 selected instance?" in page.content.decode()
    assert not WorkflowInstance.objects.get(id="order-waiting").terminate_requested
    response = admin_client.post(url, {"post": "yes"}, follow=True)
    assert response.redirect_chain[-1][0] == change_url("order-waiting")
    assert [str(m) for m in response.context["messages"]] == [
        "Terminate requested for 1 instance; a worker applies it."
    ]
    assert WorkflowInstance.objects.get(id="order-waiting").terminate_requested


def test_the_force_delete_button_asks_for_confirmation_first(admin_client, instances):
    url = reverse("admin:django_workflows_workflowinstance_force_delete", args=["order-waiting"])
    assert "Force delete 1 selected instance?" in admin_client.post(url).content.decode()
    assert status("order-waiting") == "suspended"
    response = admin_client.post(url, {"post": "yes"}, follow=True)
    assert response.redirect_chain[-1][0] == CHANGELIST
    assert status("order-waiting") is None


def test_retry_refuses_an_instance_the_codec_cannot_read(admin_client, db, codecs, world):
    codecs.write()
    wf.start("flaky", {"user_id": "u_declined"}, id="declined")
    wf.drain()
    codecs.lose_key()
    [message] = act(admin_client, "retry", "declined")
    assert message.startswith(
        "Retried 0 instances. Refused 1: declined cannot be read by the CODEC setting: "
    )
    assert "2026-09" in message  # the key it needs
    assert WorkflowInstance.objects.get(id="declined").status == "failed"


def test_the_retry_button_refuses_an_instance_the_codec_cannot_read(
    admin_client, db, codecs, world
):
    codecs.write()
    wf.start("flaky", {"user_id": "u_declined"}, id="declined")
    wf.drain()
    codecs.lose_key()
    url = reverse("admin:django_workflows_workflowinstance_retry", args=["declined"])
    response = admin_client.post(url, follow=True)
    assert response.status_code == 200
    [message] = [str(m) for m in response.context["messages"]]
    assert "declined cannot be read by the CODEC setting" in message
    assert WorkflowInstance.objects.get(id="declined").status == "failed"


def test_cancel_terminate_and_delete_still_act_on_an_instance_the_codec_cannot_read(
    admin_client, db, codecs, world
):
    codecs.write()
    wf.start("order-fulfilment", order("a"), id="order-a")
    wf.start("order-fulfilment", order("b"), id="order-b")
    wf.start("flaky", {}, id="paid")
    wf.drain()
    codecs.lose_key()
    assert act(admin_client, "cancel", "order-a", confirm=True) == [
        "Cancel requested for 1 instance; a worker applies it."
    ]
    assert act(admin_client, "terminate", "order-b", confirm=True) == [
        "Terminate requested for 1 instance; a worker applies it."
    ]
    assert act(admin_client, "delete", "paid") == ["Deleted 1 instance."]
    assert not WorkflowInstance.objects.filter(id="paid").exists()


def test_confirming_posts_back_every_instance_selected_across_the_filtered_list(
    admin_client, instances
):
    wf.start("order-fulfilment", order("second"), id="order-second")
    wf.drain()
    listed = f"{CHANGELIST}?status__exact=suspended"
    page = admin_client.post(
        listed, {"action": "terminate", "_selected_action": ["order-waiting"], "select_across": "1"}
    )
    html = page.content.decode()
    assert "Terminate 2 selected instances?" in html
    assert f'<a href="{listed}" class="button cancel-link">' in html.replace("&amp;", "&")
    form = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', html))
    assert form == {
        "csrfmiddlewaretoken": form["csrfmiddlewaretoken"],
        "_selected_action": "order-waiting",
        "select_across": "1",
        "action": "terminate",
        "post": "yes",
    }
    response = admin_client.post(listed, form, follow=True)
    assert [str(m) for m in response.context["messages"]] == [
        "Terminate requested for 2 instances; a worker applies them."
    ]
    assert set(
        WorkflowInstance.objects.filter(terminate_requested=True).values_list("id", flat=True)
    ) == {"order-waiting", "order-second"}


def test_a_user_without_the_permission_cannot_confirm_a_terminate(support_client, instances):
    url = reverse("admin:django_workflows_workflowinstance_terminate", args=["order-waiting"])
    assert support_client.post(url, {"post": "yes"}).status_code == 403
    response = support_client.post(
        CHANGELIST,
        {"action": "terminate", "_selected_action": ["order-waiting"], "post": "yes"},
        follow=True,
    )
    assert response.status_code == 200
    assert not WorkflowInstance.objects.get(id="order-waiting").terminate_requested
