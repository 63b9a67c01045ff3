"""The admin shows how often an instance continued as new (ctx.continue_as_new())."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse

import django_workflows as wf

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:django_workflows_workflowinstance_changelist")


@pytest.fixture
def continued(define, workflow_clock):
    @define("admin-continues")
    def run(ctx, input):
        if ctx.generation < 3:
            ctx.continue_as_new()
        ctx.wait_for_signal("go", "go", key=ctx.instance_id)

    wf.start("admin-continues", {}, id="renewing")
    wf.drain()
    assert wf.get_status("renewing").generation == 3
    return "renewing"


def test_the_change_page_shows_the_generation(admin_client, continued):
    url = reverse("admin:django_workflows_workflowinstance_change", args=[quote(continued)])
    html = admin_client.get(url).content.decode()
    assert re.search(r"Generation:</label>\s*<div class=\"readonly\">3</div>", html), html


def test_the_changelist_shows_the_generation_with_the_runs(admin_client, continued):
    html = admin_client.get(CHANGELIST).content.decode()
    runs = wf.get_status(continued).runs
    assert re.search(rf'<td class="field-runs_of">{runs} · gen 3</td>', html), html
