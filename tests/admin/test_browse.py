"""Signals, schedules and rate-limit windows: browsable, never editable."""

from __future__ import annotations

import pytest
from django.urls import reverse

import django_workflows as wf
from django_workflows.models import Signal


@pytest.fixture
def schedule(db, workflow_clock):
    from django_workflows import schedules

    return schedules.upsert(
        "nightly-report", workflow="flaky", cron="0 3 * * *", input={"report": "sales"}
    )


def test_signals_are_listed_searched_and_filtered_by_name(admin_client, instances):
    wf.signal("shipment.delivered", {"trackingNumber": "T1"}, key="waiting", id="evt_1")
    wf.signal("shipment.returned", {}, key="other")
    url = reverse("admin:django_workflows_signal_changelist")
    response = admin_client.get(url, {"q": "waiting"})
    assert [s.key for s in response.context["cl"].result_list] == ["waiting"]
    response = admin_client.get(url, {"name": "shipment.returned"})
    assert [s.name for s in response.context["cl"].result_list] == ["shipment.returned"]
    detail = admin_client.get(
        reverse(
            "admin:django_workflows_signal_change", args=[Signal.objects.get(dedupe_id="evt_1").pk]
        )
    )
    assert "&quot;trackingNumber&quot;: &quot;T1&quot;" in detail.content.decode()


def test_the_schedules_show_their_spec_and_wake_time(admin_client, schedule):
    response = admin_client.get(reverse("admin:django_workflows_workflowschedule_changelist"))
    assert "nightly-report" in response.content.decode()
    detail = admin_client.get(
        reverse("admin:django_workflows_workflowschedule_change", args=["nightly-report"])
    ).content.decode()
    assert "&quot;cron&quot;: &quot;0 3 * * *&quot;" in detail
    assert "?schedule_id=nightly-report" in detail
    assert "<li>2026-01-01T03:00:00+00:00</li><li>2026-01-02T03:00:00+00:00</li>" in detail
    assert "&quot;report&quot;: &quot;sales&quot;" in detail


def test_schedules_are_paused_resumed_and_triggered_from_the_admin(admin_client, schedule):
    from django_workflows import schedules

    url = reverse("admin:django_workflows_workflowschedule_changelist")

    def act(action: str) -> list[str]:
        response = admin_client.post(
            url, {"action": action, "_selected_action": ["nightly-report"]}, follow=True
        )
        return [str(m) for m in response.context["messages"]]

    assert act("pause") == ["Paused 1 schedule."]
    assert schedules.get("nightly-report").paused is True
    assert act("trigger") == ["Triggered 1 schedule."]
    assert [i.id for i in wf.list_instances(schedule_id="nightly-report")] == [
        "nightly-report@2026-01-01T00:00:00.000Z"
    ]
    assert act("resume") == ["Resumed 1 schedule."]
    assert schedules.get("nightly-report").paused is False


def test_schedule_actions_need_their_permissions(client, schedule, django_user_model):
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_workflowschedule"))
    client.force_login(user)
    url = reverse("admin:django_workflows_workflowschedule_changelist")

    def actions() -> list[str]:
        form = client.get(url).context["action_form"]
        return [] if form is None else [n for n, _ in form.fields["action"].choices if n]

    assert actions() == []
    user.user_permissions.add(Permission.objects.get(codename="trigger_workflowschedule"))
    client.force_login(django_user_model.objects.get(pk=user.pk))
    assert actions() == ["trigger"]
    response = client.post(url, {"action": "pause", "_selected_action": ["nightly-report"]})
    from django_workflows import schedules

    assert schedules.get("nightly-report").paused is False  # not allowed: nothing happened
    assert response.status_code in (200, 302)


@pytest.mark.parametrize("model", ["signal", "workflowschedule", "ratelimitwindow"])
def test_nothing_can_be_added_changed_or_deleted(admin_client, db, model):
    assert admin_client.get(reverse(f"admin:django_workflows_{model}_add")).status_code == 403
    response = admin_client.get(reverse(f"admin:django_workflows_{model}_changelist"))
    assert response.status_code == 200
    choices = (
        response.context["action_form"].fields["action"].choices
        if response.context.get("action_form")
        else []
    )
    assert "delete_selected" not in [name for name, _ in choices]


def test_the_journal_and_waits_are_not_admin_pages_of_their_own(admin_client, db):
    from django.contrib import admin

    from django_workflows.models import JournalEntry, StoreLock, Wait

    for model in (JournalEntry, Wait, StoreLock):
        assert not admin.site.is_registered(model)
