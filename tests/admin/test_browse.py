"""Signals, schedules and rate-limit windows: browsable, never editable."""

from __future__ import annotations

import pytest
from django.urls import reverse

import django_workflows as wf
from django_workflows.models import Signal, WorkflowSchedule


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


def test_pausing_a_schedule_whose_input_is_unreadable_says_it_paused(
    admin_client, db, workflow_clock, codecs
):
    from django_workflows import schedules

    codecs.write()
    schedules.upsert("nightly-report", workflow="flaky", cron="0 3 * * *", input={"r": "sales"})
    codecs.lose_key()
    url = reverse("admin:django_workflows_workflowschedule_changelist")

    def act(action: str) -> list[str]:
        response = admin_client.post(
            url, {"action": action, "_selected_action": ["nightly-report"]}, follow=True
        )
        assert response.status_code == 200
        return [str(m) for m in response.context["messages"]]

    [message] = act("pause")
    assert message.startswith("Paused 1 schedule. nightly-report's input cannot be read by the ")
    assert "2026-09" in message and "Refused" not in message
    assert WorkflowSchedule.objects.get(pk="nightly-report").paused is True
    [message] = act("resume")
    assert message.startswith("Resumed 1 schedule. nightly-report's input cannot be read by the ")
    assert WorkflowSchedule.objects.get(pk="nightly-report").paused is False
    [message] = act("trigger")
    assert message.startswith("Triggered 0 schedules. Refused 1: nightly-report")


@pytest.mark.parametrize(
    "model", ["workflowinstance", "signal", "workflowschedule", "ratelimitwindow"]
)
def test_a_search_longer_than_any_key_says_so_instead_of_failing(
    admin_client, instances, schedule, model
):
    from django_workflows.models import RateLimitWindow

    wf.signal("shipment.delivered", {}, key="waiting")
    RateLimitWindow.objects.create(
        workflow="flaky",
        scope="key",
        key="u_42",
        count=1,
        window_end=wf.get_status("paid").updated_at,
    )
    url = reverse(f"admin:django_workflows_{model}_changelist")
    everything = [str(row.pk) for row in admin_client.get(url).context["cl"].result_list]
    for text in ["x" * 1_000_000, " ".join(["x"] * 300_000)]:
        response = admin_client.get(url, {"q": text})
        assert response.status_code == 200
        [message] = [str(m) for m in response.context["messages"]]
        assert message == (
            f"The search is {len(text)} characters long: no field it looks in holds more than "
            f"255, so it was not run."
        )
        assert [str(row.pk) for row in response.context["cl"].result_list] == everything
        assert "x x x" not in response.content.decode()  # its links do not repeat it
        assert "x" * 256 not in response.content.decode()


def test_a_search_as_long_as_a_key_still_runs(admin_client, instances):
    url = reverse("admin:django_workflows_workflowinstance_changelist")
    response = admin_client.get(url, {"q": "w" * 255})
    assert [str(m) for m in response.context["messages"]] == []
    assert list(response.context["cl"].result_list) == []
    assert response.context["cl"].query == "w" * 255
