"""Signals, schedules and rate-limit windows: browsable, never editable."""

from __future__ import annotations

import pytest
from django.urls import reverse

import django_workflows as wf
from django_workflows.models import Signal, WorkflowSchedule


@pytest.fixture
def schedule(db, workflow_clock):
    now = workflow_clock.now()
    return WorkflowSchedule.objects.create(
        id="nightly-report",
        workflow="flaky",
        spec={"cron": "0 3 * * *", "tz": "UTC"},
        wake_at=now,
        created_at=now,
        updated_at=now,
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
