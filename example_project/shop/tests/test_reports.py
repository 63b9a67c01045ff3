"""The nightly sales report: a declared schedule, started by the worker as the clock passes 02:00."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import django_workflows
from shop import services
from shop.models import Order

from .support import ITEMS


def test_the_nightly_report_counts_the_day_befores_orders(place, clock) -> None:
    # Two orders on 1 January (the manual clock's first day), one cancelled; one on 2 January.
    kept, cancelled, later = place(), place(), place()
    services.cancel_order(cancelled.id, "Changed my mind.")
    first_day = datetime(2026, 1, 1, 12, tzinfo=UTC)
    Order.objects.filter(pk__in=[kept.pk, cancelled.pk]).update(created_at=first_day)
    Order.objects.filter(pk=later.pk).update(created_at=first_day + timedelta(days=1))
    django_workflows.drain()

    clock.advance(timedelta(days=1, hours=2))  # 2 January, 02:00 UTC
    django_workflows.drain()

    [report] = django_workflows.list_instances(schedule_id="nightly-sales-report")
    assert report.id == "nightly-sales-report@2026-01-02T02:00:00.000Z"
    assert (report.workflow, report.status) == ("sales-report", "completed")
    assert report.input == {"day": "2026-01-01"}
    assert report.output == {"day": "2026-01-01", "orders": 2, "total": ITEMS[0]["price"]}


def test_the_schedule_is_saved_for_the_admin(clock) -> None:
    django_workflows.drain()

    schedule = django_workflows.schedules.get("nightly-sales-report")
    assert (schedule.workflow, schedule.cron) == ("sales-report", "0 2 * * *")
    assert schedule.next_at == datetime(2026, 1, 1, 2, tzinfo=UTC)
