"""A step's entry keeps the step.log lines of every attempt, not only of its latest: a step that
failed once and then succeeded shows the failing attempt's lines, grouped by attempt, in its
journal entry and under the step in the admin. Each attempt's lines are bounded as the latest's
are, and an entry keeps those of its last MAX_ATTEMPTS attempts, saying how many it let go."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse

import django_workflows as wf
from django_workflows import Retry
from django_workflows.engine.steplog import MAX_ATTEMPTS
from django_workflows.models import JournalEntry

pytestmark = pytest.mark.django_db


@pytest.fixture
def flaky(define):
    """`steplogs-flaky`: its step logs two lines and fails on its first attempt (retried a
    minute later), then logs one and succeeds."""

    @define("steplogs-flaky")
    def run(ctx, input):
        def pay(step):
            if step.attempt == 1:
                step.log.info("calling <the bank> for %s", input)
                step.log.warning("the bank said: busy")
                raise ConnectionError("bank busy")
            step.log.info("paid on attempt %d", step.attempt)
            return "paid"

        return ctx.step("pay", pay, retry=Retry(attempts=3, delay="1m"))

    return run


def run_flaky(workflow_clock, id):
    wf.start("steplogs-flaky", "order-7", id=id)
    wf.drain()
    assert wf.get_status(id).status == "suspended"  # waiting for its retry
    workflow_clock.advance("1m")
    wf.drain()
    assert wf.result(id) == "paid"


def messages(lines):
    return [(line["level"], line["message"]) for line in lines]


def change_page(client, id):
    url = reverse("admin:django_workflows_workflowinstance_change", args=[quote(id)])
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def section(html, start, end):
    return html[html.index(start) : html.index(end, html.index(start))]


def test_the_entry_keeps_the_failed_attempts_lines_beside_the_latest(
    no_codec, workflow_clock, flaky
):
    run_flaky(workflow_clock, "flaky")
    document = JournalEntry.objects.get(instance_id="flaky", name="pay").document
    assert (document["status"], document["attempt"]) == ("completed", 2)
    assert messages(document["logs"]) == [("INFO", "paid on attempt 2")]
    (earlier,) = document["earlier_logs"]
    assert earlier["attempt"] == 1 and earlier["logs_dropped"] == 0
    assert messages(earlier["logs"]) == [
        ("INFO", "calling <the bank> for order-7"),
        ("WARNING", "the bank said: busy"),
    ]
    assert document["earlier_logs_omitted"] == 0
    # The public reading: JournalEntry.logs are the latest attempt's, as before.
    (entry,) = [e for e in wf.get_status("flaky", journal=True).journal if e.name == "pay"]
    assert [line.message for line in entry.logs] == ["paid on attempt 2"]


def test_the_admin_shows_each_attempts_lines_under_the_step(
    admin_client, with_codec, workflow_clock, flaky
):
    run_flaky(workflow_clock, "shown")
    raw = JournalEntry.objects.get(instance_id="shown", name="pay").document
    assert raw["earlier_logs"].startswith("$wf1:aes-256-gcm:")  # encrypted like the latest's
    assert "the bank said" not in json.dumps(raw)
    html = change_page(admin_client, "shown")
    timeline = section(html, 'id="journal-timeline"', "</fieldset>")
    table = section(html, 'id="journal-table"', "</fieldset>")
    for part in (timeline, table):
        groups = re.findall(r"<summary>Log of attempt (\d+): (\d+) lines?</summary>", part)
        assert groups == [("1", "2"), ("2", "1")]
        first = part.index("Log of attempt 1")
        assert part.index("calling &lt;the bank&gt; for order-7", first) < part.index(
            "Log of attempt 2"
        )
        assert '<span class="dw-log-level">WARNING</span> the bank said: busy</li>' in part
        assert '<span class="dw-log-level">INFO</span> paid on attempt 2</li>' in part
        assert "dw-logs-omitted" not in part


def test_an_attempt_that_logged_nothing_is_not_listed(no_codec, workflow_clock, define):
    @define("steplogs-quiet-first")
    def run(ctx, input):
        def work(step):
            if step.attempt < 3:
                if step.attempt == 2:
                    step.log.info("second try")
                raise ConnectionError("again")
            return 1

        ctx.step("work", work, retry=Retry(attempts=3, delay="0s"))

    wf.start("steplogs-quiet-first", None, id="quiet-first")
    wf.drain()
    document = JournalEntry.objects.get(instance_id="quiet-first", name="work").document
    assert "logs" not in document  # the attempt that completed logged nothing
    assert [(group["attempt"], messages(group["logs"])) for group in document["earlier_logs"]] == [
        (2, [("INFO", "second try")])
    ]


def test_an_unbounded_retry_keeps_the_last_attempts_and_says_how_many_it_let_go(
    admin_client, no_codec, workflow_clock, define
):
    failures = MAX_ATTEMPTS + 3

    @define("steplogs-stubborn")
    def run(ctx, input):
        def work(step):
            step.log.info("attempt %d", step.attempt)
            if step.attempt <= failures:
                raise ConnectionError("again")
            return step.attempt

        ctx.step("work", work, retry=Retry(attempts=100, delay="0s"))

    wf.start("steplogs-stubborn", None, id="stubborn")
    wf.drain()
    document = JournalEntry.objects.get(instance_id="stubborn", name="work").document
    assert document["attempt"] == failures + 1
    kept = [group["attempt"] for group in document["earlier_logs"]]
    assert kept == list(range(failures + 1 - (MAX_ATTEMPTS - 1), failures + 1))
    assert document["earlier_logs_omitted"] == failures - (MAX_ATTEMPTS - 1) == 4
    table = section(change_page(admin_client, "stubborn"), 'id="journal-table"', "</fieldset>")
    assert (
        '<p class="dw-logs-omitted">The lines of 4 earlier attempts were not kept (an entry '
        f"keeps those of its last {MAX_ATTEMPTS} attempts).</p>"
    ) in table
    assert len(re.findall(r"<summary>Log of attempt \d+", table)) == MAX_ATTEMPTS


def test_a_retried_compensation_keeps_its_failed_attempts_lines(no_codec, workflow_clock, define):
    def undo(result, step):
        step.log.info("refund attempt %d", step.attempt)
        if step.attempt == 1:
            raise ConnectionError("refund service down")

    @define("steplogs-undo-retried")
    def run(ctx, input):
        ctx.step(
            "charge",
            lambda step: "ch_1",
            compensate=undo,
            compensate_retry=Retry(attempts=2, delay="0s"),
        )
        ctx.fail("out of stock")

    wf.start("steplogs-undo-retried", None, id="undo-retried")
    wf.drain()
    document = JournalEntry.objects.get(
        instance_id="undo-retried", name="$compensate:charge"
    ).document
    assert document["status"] == "completed"
    assert messages(document["logs"]) == [("INFO", "refund attempt 2")]
    assert [(group["attempt"], messages(group["logs"])) for group in document["earlier_logs"]] == [
        (1, [("INFO", "refund attempt 1")])
    ]
