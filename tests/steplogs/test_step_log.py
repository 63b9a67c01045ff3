"""step.log: each line reaches the django_workflows logger with the instance and step in its
record, and is journaled with the attempt (at most 50 lines and 16 KiB, the rest counted),
encrypted by a codec."""

from __future__ import annotations

import json
import logging

import pytest

import django_workflows as wf
from django_workflows import Retry, StepLog
from django_workflows.engine.steplog import MAX_BYTES, MAX_LINES
from django_workflows.models import JournalEntry

pytestmark = pytest.mark.django_db


def _entry(id, name):
    (entry,) = [e for e in wf.get_status(id, journal=True).journal if e.name == name]
    return entry


def test_lines_reach_the_logger_with_the_instance_and_step(
    no_codec, workflow_clock, define, caplog
):
    @define("steplogs-hello")
    def run(ctx, input):
        return ctx.step("greet", lambda step: step.log.info("hello %s", input) or "done")

    wf.start("steplogs-hello", "ada", id="hello")
    with caplog.at_level(logging.INFO, logger="django_workflows"):
        wf.drain()
    (record,) = [r for r in caplog.records if r.getMessage() == "hello ada"]
    assert record.name == "django_workflows"
    assert (record.instance_id, record.workflow, record.step, record.attempt) == (
        "hello",
        "steplogs-hello",
        "greet",
        1,
    )
    assert record.filename == "test_step_log.py"  # the step's line, not the adapter's
    entry = _entry("hello", "greet")
    assert entry.status == "completed"
    assert entry.logs == [StepLog(entry.logs[0].at, "INFO", "hello ada")]
    assert entry.logs[0].at == workflow_clock.now()
    assert entry.logs_dropped == 0


def test_lines_are_journaled_whatever_the_loggers_level(no_codec, workflow_clock, define):
    @define("steplogs-quiet")
    def run(ctx, input):
        def work(step):
            step.log.debug("a detail")
            step.log.warning("a warning")

        ctx.step("work", work)

    logger = logging.getLogger("django_workflows")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        wf.start("steplogs-quiet", None, id="quiet")
        wf.drain()
    finally:
        logger.setLevel(level)
    assert [(line.level, line.message) for line in _entry("quiet", "work").logs] == [
        ("DEBUG", "a detail"),
        ("WARNING", "a warning"),
    ]


def test_a_failed_attempt_keeps_its_lines_and_a_retry_the_last_attempts(
    no_codec, workflow_clock, define
):
    @define("steplogs-retried")
    def run(ctx, input):
        def flaky(step):
            step.log.info("attempt %d", step.attempt)
            if step.attempt < 3:
                raise ConnectionError("try again")
            return step.attempt

        try:
            ctx.step("flaky", flaky, retry=Retry(attempts=3, delay="0s"))
        finally:
            pass
        ctx.step("boom", lambda step: step.log.error("giving up") or 1 / 0, retry=Retry(attempts=1))

    wf.start("steplogs-retried", None, id="retried")
    wf.drain()
    flaky = _entry("retried", "flaky")
    assert (flaky.status, flaky.attempt) == ("completed", 3)
    assert [line.message for line in flaky.logs] == ["attempt 3"]
    boom = _entry("retried", "boom")
    assert boom.status == "failed"
    assert [(line.level, line.message) for line in boom.logs] == [("ERROR", "giving up")]
    assert "ZeroDivisionError" in boom.error["traceback"]


def test_at_most_50_lines_are_journaled_and_the_rest_counted(no_codec, workflow_clock, define):
    @define("steplogs-chatty")
    def run(ctx, input):
        def chatty(step):
            for i in range(80):
                step.log.info("line %d", i)

        ctx.step("chatty", chatty)

    wf.start("steplogs-chatty", None, id="chatty")
    wf.drain()
    entry = _entry("chatty", "chatty")
    assert len(entry.logs) == MAX_LINES == 50
    assert entry.logs[-1].message == "line 49"
    assert entry.logs_dropped == 30


def test_at_most_16_kib_of_lines_are_journaled_and_the_rest_counted(
    no_codec, workflow_clock, define
):
    @define("steplogs-wordy")
    def run(ctx, input):
        def wordy(step):
            for i in range(10):
                step.log.info("%d %s", i, "x" * 3000)

        ctx.step("wordy", wordy)

    wf.start("steplogs-wordy", None, id="wordy")
    wf.drain()
    entry = _entry("wordy", "wordy")
    kept = sum(len(f"{line.at.isoformat()}{line.level}{line.message}") for line in entry.logs)
    assert kept <= MAX_BYTES == 16 * 1024
    assert len(entry.logs) == 5 and entry.logs_dropped == 5


def test_the_lines_are_encrypted_at_rest(with_codec, workflow_clock, define):
    @define("steplogs-secret")
    def run(ctx, input):
        ctx.step("secret", lambda step: step.log.info("the card is %s", "4242-SECRET") or 1)

    wf.start("steplogs-secret", None, id="secret")
    wf.drain()
    raw = JournalEntry.objects.get(instance_id="secret", name="secret").document
    assert "4242-SECRET" not in json.dumps(raw)
    assert raw["logs"].startswith("$wf1:aes-256-gcm:")
    assert _entry("secret", "secret").logs[0].message == "the card is 4242-SECRET"


def test_a_compensation_journals_its_lines(no_codec, workflow_clock, define):
    def undo(result, step):
        step.log.info("refunding %s", result)

    @define("steplogs-undo-logs")
    def run(ctx, input):
        ctx.step("charge", lambda step: "ch_1", compensate=undo)
        ctx.fail("out of stock")

    wf.start("steplogs-undo-logs", None, id="undo-logs")
    wf.drain()
    (entry,) = [
        e for e in wf.get_status("undo-logs", journal=True).journal if e.kind == "compensation"
    ]
    assert entry.status == "completed"
    assert [line.message for line in entry.logs] == ["refunding ch_1"]
