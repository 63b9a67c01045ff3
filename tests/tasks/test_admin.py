"""Tasks in the admin: the filter "tasks" and a task's function path on its page."""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse

import django_workflows as wf
from tests.tasks import tasks

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:django_workflows_workflowinstance_changelist")


def change_url(id: str) -> str:
    return reverse("admin:django_workflows_workflowinstance_change", args=[quote(id)])


def test_the_tasks_filter_splits_tasks_from_other_instances(admin_client, define):
    @define("plain")
    def plain(ctx, input):
        return 1

    wf.start("plain", None, id="plain-1")
    html = admin_client.get(CHANGELIST).content.decode()
    assert "By tasks" not in html  # no task yet: no filter
    result = tasks.add.enqueue(1, 2)
    html = admin_client.get(CHANGELIST).content.decode()
    assert "By tasks" in html
    only_tasks = admin_client.get(CHANGELIST, {"task": "yes"}).context["cl"].result_list
    assert [row.id for row in only_tasks] == [result.id]
    others = admin_client.get(CHANGELIST, {"task": "no"}).context["cl"].result_list
    assert [row.id for row in others] == ["plain-1"]


def test_a_tasks_page_shows_its_function_path(admin_client, define):
    result = tasks.add.enqueue(1, 2)
    html = admin_client.get(change_url(result.id)).content.decode()
    assert "Django task" in html and "tests.tasks.tasks.add" in html

    @define("plain")
    def plain(ctx, input):
        return 1

    wf.start("plain", None, id="plain-1")
    html = admin_client.get(change_url("plain-1")).content.decode()
    assert "task function" not in html
