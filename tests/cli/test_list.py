"""`manage.py workflows list`: the instances matching its filters, as aligned columns that fit
80 columns, as ids only, or as JSON."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

import django_workflows as wf

from .conftest import run

pytestmark = pytest.mark.django_db


def ids(out: str) -> list[str]:
    return out.split()


def test_the_list_is_a_table_of_every_instance_oldest_first(instances):
    status, out, err = run("list")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "WORKFLOW", "STATUS", "QUEUE", "UPDATED", "DETAIL"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert list(rows) == ["done-1", "gate-1", "order-1", "pay-1", "signup-1", "gpu-1"]
    assert rows["order-1"][:6] == ["order-1", "cli-order@1", "suspended", "default", "5m", "ago"]
    assert rows["gpu-1"][:6] == ["gpu-1", "cli-gpu@1", "pending", "gpu", "0s", "ago"]
    # The columns line up: each header starts where its cells start.
    for header in ("WORKFLOW", "STATUS", "QUEUE", "UPDATED"):
        column = lines[0].index(header)
        assert all(line[column - 2 : column] == "  " for line in lines[1:])
    assert all(len(line) <= 80 and line == line.rstrip() for line in lines)


def test_the_detail_says_what_each_waits_for_or_failed_with(instances):
    lines = run("list")[1].splitlines()
    column = lines[0].index("DETAIL")
    detail = {line.split()[0]: line[column:] for line in lines[1:]}
    assert detail["order-1"] == "until 2026-01-01 01:00:00"
    assert detail["signup-1"] == "waits confirmed[u1]"
    assert detail["gate-1"] == "waits $breakpoint"
    assert detail["pay-1"].startswith('StepFailedError: Step "c')
    assert detail["done-1"] == ""


def test_a_long_detail_is_cut_to_fit_the_terminal_and_ids_never_are(instances, monkeypatch):
    wf.start("cli-order", None, id="x" * 40)
    monkeypatch.setenv("COLUMNS", "100")
    wide = run("list")[1].splitlines()
    assert any(line.startswith("x" * 40 + "  cli-order@1") for line in wide)
    assert max(len(line) for line in wide) <= 100
    monkeypatch.setenv("COLUMNS", "80")
    narrow = run("list")[1].splitlines()
    pay = next(line for line in narrow if line.startswith("pay-1 "))
    assert pay.endswith("…")
    assert any(line.startswith("x" * 40) for line in narrow)  # wider than 80: the id stays whole


def test_filters_by_status_workflow_queue_and_tag(instances):
    assert ids(run("list", "-q", "--status", "suspended")[1]) == ["gate-1", "order-1", "signup-1"]
    assert ids(run("list", "-q", "--status", "failed", "--status", "completed")[1]) == [
        "done-1",
        "pay-1",
    ]
    assert ids(run("list", "-q", "--status", "failed,pending")[1]) == ["pay-1", "gpu-1"]
    assert ids(run("list", "-q", "--workflow", "cli-approval")[1]) == ["done-1", "gate-1"]
    assert ids(run("list", "-q", "--queue", "gpu")[1]) == ["gpu-1"]
    assert ids(run("list", "-q", "--tag", "vip")[1]) == ["order-1"]
    assert ids(run("list", "-q", "--workflow", "cli-order", "--version", "2")[1]) == []


def test_limit_and_offset_page_through_and_a_full_page_says_where_the_next_starts(instances):
    status, out, err = run("list", "-q", "--limit", "2")
    assert (status, ids(out)) == (0, ["done-1", "gate-1"])
    assert err == "Showed 2, the --limit; the next page: --offset 2.\n"
    status, out, err = run("list", "-q", "--limit", "2", "--offset", "2")
    assert ids(out) == ["order-1", "pay-1"]
    status, out, err = run("list", "-q", "--limit", "3", "--offset", "4")
    assert (ids(out), err) == (["signup-1", "gpu-1"], "")


def test_no_match_prints_nothing_on_the_output_and_says_so_on_the_error_output(instances):
    assert run("list", "--tag", "nobody-has-it") == (0, "", "No instances match.\n")
    assert run("list", "--json", "--tag", "nobody-has-it") == (0, "[]\n", "")


def test_json_lists_each_instance_as_get_status_gives_it(instances):
    status, out, err = run("list", "--json", "--workflow", "cli-order")
    assert (status, err) == (0, "")
    [document] = json.loads(out)
    assert document["id"] == "order-1"
    assert document["status"] == "suspended"
    assert document["input"] == {"n": 1}
    assert document["values"] == {"stage": "reserved"}
    assert document["tags"] == ["vip"] and document["attributes"] == {"amount": 1200}
    assert document["created_at"] == "2026-01-01T00:00:00+00:00"
    assert document["wake_at"] == "2026-01-01T01:00:00+00:00"
    assert document["queue"] == "default"
    assert document["journal"] is None and document["children"] is None
    assert document["waits"] == []
    signup = json.loads(run("list", "--json", "--workflow", "cli-signup")[1])[0]
    assert signup["waits"] == [{"signal": "confirmed", "key": "u1"}]


def test_a_subject_lists_the_instances_about_that_object(instances, define):
    from django.contrib.auth.models import Group

    group = Group.objects.create(name="ops")
    wf.start("cli-order", None, id="about-group", subject=group)
    label = f"auth.group:{group.pk}"
    assert wf.get_status("about-group").subject == label
    assert ids(run("list", "-q", "--subject", label)[1]) == ["about-group"]
    group.delete()  # its instances are still found by its label
    assert ids(run("list", "-q", "--subject", label)[1]) == ["about-group"]


def test_a_queue_only_a_worker_lists_is_known(instances):
    from django_workflows.models import WorkerProcess

    seen = wf.get_status("order-1").created_at
    WorkerProcess.objects.create(
        id="w1",
        host="box",
        pid=1,
        queues=["slow-api"],
        concurrency=1,
        version="0",
        heartbeat=10,
        started_at=seen,
        last_seen_at=seen,
        gone_at=seen + timedelta(seconds=30),
    )
    assert run("list", "--queue", "slow-api") == (0, "", "No instances match.\n")


def test_a_message_with_line_breaks_stays_on_its_row(instances, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    wf.cancel("order-1", "first line\nsecond line")
    wf.drain()
    lines = run("list")[1].splitlines()
    assert len(lines) == 7
    [cancelled] = [line for line in lines if line.startswith("order-1 ")]
    assert cancelled.endswith("WorkflowCancelledError: first line second line")
