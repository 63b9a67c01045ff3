"""The admin's instance page says which branch of a patch an instance took."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse

import django_workflows as wf
from tests.patches.conftest import NAME

pytestmark = pytest.mark.django_db


def _labels(admin_client: Any, id: str) -> tuple[list[str], list[str]]:
    url = reverse("admin:django_workflows_workflowinstance_change", args=[quote(id)])
    response = admin_client.get(url)
    assert response.status_code == 200
    timeline = [row.name for row in response.context["timeline"].rows]
    return timeline, [row["name"] for row in response.context["journal"]]


def test_the_timeline_and_the_journal_name_the_branch_each_instance_took(
    admin_client, deploy, workflow_clock
):
    def before(ctx: Any, order: Any) -> None:
        ctx.step("email-receipt", lambda step: None)
        ctx.sleep("cool-off", "1h")

    def after(ctx: Any, order: Any) -> None:
        if not ctx.patched("order-confirmation"):
            ctx.step("email-receipt", lambda step: None)
        ctx.sleep("cool-off", "1h")

    deploy(before)
    wf.start(NAME, {}, id="old")
    wf.drain()
    deploy(after)
    wf.start(NAME, {}, id="new")
    wf.drain()
    workflow_clock.advance("1h")
    wf.drain()
    timeline, journal = _labels(admin_client, "old")
    assert "$patch:order-confirmation (old branch)" in timeline
    assert "$patch:order-confirmation (old branch)" in journal
    timeline, journal = _labels(admin_client, "new")
    assert timeline[0] == journal[0] == "$patch:order-confirmation (new branch)"
