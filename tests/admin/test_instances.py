"""The instance changelist and change page: what support sees."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse

import django_workflows as wf
from django_workflows.admin import STATUS_COLOURS
from django_workflows.models import Status, WorkflowInstance, WorkflowSchedule

CHANGELIST = reverse("admin:django_workflows_workflowinstance_changelist")


def change_url(id: str) -> str:
    return reverse("admin:django_workflows_workflowinstance_change", args=[quote(id)])


def test_every_status_has_a_badge_colour():
    assert set(STATUS_COLOURS) == set(Status.values)
    assert len(set(STATUS_COLOURS.values())) == len(STATUS_COLOURS), "one colour per status"


def test_the_changelist_shows_every_instance_with_a_status_badge(admin_client, instances):
    response = admin_client.get(CHANGELIST)
    assert response.status_code == 200
    html = response.content.decode()
    for id in instances.values():
        assert id in html
    assert f'style="background-color: {STATUS_COLOURS["failed"]}">failed</span>' in html
    assert "awaiting-delivery" in html  # the custom status column


def test_status_comes_first_in_the_filters(admin_client, instances):
    response = admin_client.get(CHANGELIST)
    specs = response.context["cl"].filter_specs
    names = [getattr(spec, "field_path", None) or spec.parameter_name for spec in specs]
    assert names == ["status", "workflow", "version", "created_at"]


def test_the_filters_choices_never_read_the_instances(admin_client, instances):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        response = admin_client.get(CHANGELIST)
    html = response.content.decode()
    assert "?workflow=order-fulfilment" in html and "?version=1" in html
    instance_table = WorkflowInstance._meta.db_table
    reads = [q["sql"] for q in captured.captured_queries if instance_table in q["sql"]]
    # A DISTINCT of a column over every instance (Django's field filters, its date hierarchy);
    # the queues' and fair keys' lists read partial indexes (a WHERE), or a loose scan.
    assert not [sql for sql in reads if "DISTINCT" in sql.upper() and "WHERE" not in sql.upper()]
    assert not [sql for sql in reads if "COUNT(*)" in sql and "LIMIT" not in sql.upper()]


def test_the_changelist_filters_by_workflow_and_version(admin_client, instances):
    response = admin_client.get(CHANGELIST, {"workflow": "flaky", "version": "1"})
    shown = {obj.id for obj in response.context["cl"].result_list}
    assert shown == {"declined", "paid"}
    assert not admin_client.get(CHANGELIST, {"version": "x"}).context["cl"].result_list


def test_the_changelist_filters_by_status(admin_client, instances):
    response = admin_client.get(CHANGELIST, {"status__exact": "failed"})
    shown = {obj.id for obj in response.context["cl"].result_list}
    assert shown == {instances["failed"], instances["compensated"]}


def test_the_changelist_searches_by_exact_id(admin_client, instances):
    response = admin_client.get(CHANGELIST, {"q": "order-waiting"})
    assert [obj.id for obj in response.context["cl"].result_list] == ["order-waiting"]
    response = admin_client.get(CHANGELIST, {"q": "waiting"})
    assert list(response.context["cl"].result_list) == []


def test_the_changelist_filters_by_creation_time(admin_client, instances, workflow_clock):
    now = workflow_clock.now()
    today = {
        "created_at__gte": str(now - timedelta(hours=1)),
        "created_at__lt": str(now + timedelta(minutes=1)),
    }
    response = admin_client.get(CHANGELIST, today)
    assert response.status_code == 200
    assert len(response.context["cl"].result_list) == 4
    later = {"created_at__gte": str(now + timedelta(days=1))}
    assert admin_client.get(CHANGELIST, later).context["cl"].result_list.count() == 0


def test_no_instance_can_be_added_or_edited(admin_client, instances):
    assert (
        admin_client.get(reverse("admin:django_workflows_workflowinstance_add")).status_code == 403
    )
    before = WorkflowInstance.objects.get(id="declined")
    response = admin_client.post(change_url("declined"), {"status": "completed", "runs": 9})
    assert response.status_code == 403
    after = WorkflowInstance.objects.get(id="declined")
    assert (after.status, after.runs, after.updated_at) == (
        before.status,
        before.runs,
        before.updated_at,
    )


def test_the_change_page_shows_input_error_and_its_cause(admin_client, instances):
    response = admin_client.get(change_url("declined"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "View workflow instance" in html  # read-only
    assert "&quot;user_id&quot;: &quot;u_declined&quot;" in html  # the input, pretty-printed
    assert "<code>StepFailedError</code>" in html
    assert "<strong>Cause:</strong> <code>NonRetryableStepError</code>" in html
    assert "The payment provider declined the card" in html


def test_the_change_page_shows_the_compensation_error(admin_client, instances):
    instance = WorkflowInstance.objects.get(id="declined")
    instance.status = Status.COMPENSATION_FAILED
    instance.error = {
        **instance.error,
        "compensation": {"name": "ConnectionError", "message": "refund is unavailable"},
    }
    instance.save()
    html = admin_client.get(change_url("declined")).content.decode()
    assert "<strong>Compensation error:</strong> <code>ConnectionError</code>" in html
    assert "refund is unavailable" in html


def test_the_change_page_draws_the_journal_as_a_timeline(admin_client, instances):
    response = admin_client.get(change_url("order-no-stock"))
    html = response.content.decode()
    timeline = response.context["timeline"]
    assert [(r.name, r.kind, r.status) for r in timeline.rows] == [
        ("charge-payment", "step", "completed"),
        ("reserve-stock", "step", "failed"),
        ("undo charge-payment", "compensation", "completed"),
    ]
    assert 'id="journal-timeline"' in html
    assert "$compensate:" not in html.replace('data-entry="$compensate:', "")
    assert html.count('class="dw-bar') == 3
    assert 'data-entry="$compensate:charge-payment" data-status="completed"' in html
    assert f"background-color: {STATUS_COLOURS['failed']}" in html
    assert 'id="journal-table"' in html and "k is out of stock" not in html
    assert "unicorn is out of stock." in html  # the failed step's error, in the table


def test_a_timeline_of_days_scales_to_the_instance_and_keeps_short_steps_visible(
    admin_client, instances, workflow_clock
):
    workflow_clock.advance("2d")
    wf.signal("shipment.delivered", {"trackingNumber": "T1"}, key="waiting")
    wf.drain()  # delivered: now asleep for 7 days before the review request
    response = admin_client.get(change_url("order-waiting"))
    timeline = response.context["timeline"]
    rows = {row.name: row for row in timeline.rows}
    assert (timeline.end - timeline.start).days == 9  # to the end of the sleep
    assert rows["charge-payment"].width >= 0.6  # an instant step on a 9-day axis
    assert rows["await-delivery"].width == pytest.approx(2 / 9 * 100, abs=0.01)
    assert rows["delivered"].marker  # a commit is an instant
    sleep = rows["before-review-request"]
    assert (sleep.status, sleep.left + sleep.width) == ("pending", pytest.approx(100))
    assert timeline.ticks[-1][1] == "Jan 10 00:00"
    assert 'class="dw-marker"' in response.content.decode()


def test_the_change_page_links_parent_children_and_schedule(admin_client, instances):
    WorkflowSchedule.objects.create(
        id="nightly",
        workflow="flaky",
        spec={"cron": "0 3 * * *"},
        created_at=WorkflowInstance.objects.get(id="paid").created_at,
        updated_at=WorkflowInstance.objects.get(id="paid").updated_at,
    )
    WorkflowInstance.objects.filter(id="paid").update(
        parent_id="order-waiting", schedule_id="nightly"
    )
    child_page = admin_client.get(change_url("paid")).content.decode()
    assert f'<a href="{change_url("order-waiting")}">order-waiting</a>' in child_page
    schedule_url = reverse("admin:django_workflows_workflowschedule_change", args=["nightly"])
    assert f'<a href="{schedule_url}">nightly</a>' in child_page
    parent_page = admin_client.get(change_url("order-waiting")).content.decode()
    assert f'<a href="{change_url("paid")}">paid</a>' in parent_page
    assert "shipment.delivered" in parent_page and "waiting" in parent_page  # its waits


def test_an_id_with_slashes_and_quotes_opens(admin_client, instances, world):
    wf.start("flaky", {}, id="tenant/7_order's")
    wf.drain()
    response = admin_client.get(change_url("tenant/7_order's"))
    assert response.status_code == 200
    assert response.context["original"].id == "tenant/7_order's"


def test_the_list_counts_no_further_than_its_bound(admin_client, instances, monkeypatch):
    from django_workflows.admin import pages

    monkeypatch.setattr(pages, "COUNTED", 3)
    response = admin_client.get(CHANGELIST)
    assert "More than 3 workflow instances" in response.content.decode()
    assert len(response.context["cl"].result_list) == 4  # one page of 50 lists them all
    monkeypatch.setattr(pages, "COUNTED", 4)
    response = admin_client.get(CHANGELIST)
    assert "4 workflow instances" in response.content.decode()
    assert "More than" not in response.content.decode()


def test_a_search_for_a_tag_that_is_also_an_id_finds_both(admin_client, instances):
    wf.start("flaky", {}, id="vip", tags=["other"])
    wf.start("flaky", {}, id="tagged", tags=["vip"])
    response = admin_client.get(CHANGELIST, {"q": "vip"})
    assert sorted(obj.id for obj in response.context["cl"].result_list) == ["tagged", "vip"]


def test_a_tag_lists_its_instances_newest_first_page_by_page(admin_client, db, workflow_clock):
    # More than a page (50) of one tag, and a scarce one: however the database plans a page
    # (pages.py reads it for its first rows), it lists the tag's instances, the newest first.
    for n in range(120):
        tags = (["common"] if n % 2 else []) + (["scarce"] if n in (7, 80) else [])
        wf.start("flaky", {}, id=f"t-{n:03d}", tags=tags)
        workflow_clock.advance("1s")
    common = [f"t-{n:03d}" for n in reversed(range(120)) if n % 2]
    for query in ({"tag": "common"}, {"q": "common"}, {"q": "tag:common"}):
        pages = [admin_client.get(CHANGELIST, {**query, "p": p}) for p in ("1", "2")]
        assert [obj.id for page in pages for obj in page.context["cl"].result_list] == common
        assert "60 workflow instances" in pages[0].content.decode()
    for query in ({"tag": "scarce"}, {"q": "scarce"}):
        response = admin_client.get(CHANGELIST, query)
        assert [obj.id for obj in response.context["cl"].result_list] == ["t-080", "t-007"]
