"""A failed attempt keeps its traceback with its error: in get_status(), on StepFailedError, on
the instance's error, encrypted by a codec, cut to its tail past 16 KiB, and named in the
worker's log line by the file and line that raised."""

from __future__ import annotations

import json
import logging

import pytest

import django_workflows as wf
from django_workflows import NonRetryableStepError, StepFailedError
from django_workflows.engine.journal import error_from_dict
from django_workflows.engine.tracebacks import MAX_TRACEBACK, format_traceback
from django_workflows.models import JournalEntry
from tests.steplogs import conftest
from tests.steplogs.conftest import raise_from_deep

pytestmark = pytest.mark.django_db


def test_a_failed_step_keeps_its_traceback_in_get_status(no_codec, workflow_clock, failing):
    wf.start("steplogs-failing", None, id="tb")
    wf.drain()
    status = wf.get_status("tb", journal=True)
    assert status.status == "failed"
    (entry,) = [e for e in status.journal if e.name == "charge"]
    assert entry.status == "failed" and entry.attempt == 2
    traceback = entry.error["traceback"]
    assert traceback.startswith("Traceback (most recent call last):")
    assert "in raise_from_deep" in traceback
    assert traceback.rstrip().endswith("ValueError: card declined for 42")
    # The instance's error, the StepFailedError, carries it too.
    assert status.error["name"] == "StepFailedError"
    assert status.error["traceback"] == traceback
    error = error_from_dict(status.error)
    assert isinstance(error, StepFailedError) and error.traceback == traceback


def test_the_workflow_that_catches_the_step_failure_reads_its_traceback(
    no_codec, workflow_clock, define
):
    def charge(step):
        raise NonRetryableStepError("no such card")

    @define("steplogs-catching")
    def run(ctx, input):
        try:
            ctx.step("charge", charge)
        except StepFailedError as error:
            return error.traceback

    wf.start("steplogs-catching", None, id="caught")
    wf.drain()
    status = wf.get_status("caught")
    assert status.status == "completed", status.error
    assert "NonRetryableStepError: no such card" in status.output
    assert ", in charge\n" in status.output


def test_a_compensation_that_fails_keeps_its_traceback(no_codec, workflow_clock, define):
    def undo(result, step):
        raise RuntimeError("refund refused")

    @define("steplogs-undo")
    def run(ctx, input):
        from django_workflows import Retry

        ctx.step("charge", lambda step: 1, compensate=undo, compensate_retry=Retry(attempts=1))
        ctx.fail("out of stock")

    wf.start("steplogs-undo", None, id="undo")
    wf.drain()
    status = wf.get_status("undo", journal=True)
    assert status.status == "compensation_failed"
    (entry,) = [e for e in status.journal if e.kind == "compensation"]
    assert "in undo\n" in entry.error["traceback"]
    assert "RuntimeError: refund refused" in status.error["compensation"]["traceback"]


def test_the_traceback_is_encrypted_at_rest(with_codec, workflow_clock, failing):
    wf.start("steplogs-failing", None, id="sealed")
    wf.drain()
    raw = JournalEntry.objects.get(instance_id="sealed", name="charge").document
    stored = json.dumps(raw)
    assert "raise_from_deep" not in stored and "card declined" not in stored
    assert raw["error"]["data"].startswith("$wf1:aes-256-gcm:")
    # ... and reads back whole through the codec.
    (entry,) = [e for e in wf.get_status("sealed", journal=True).journal if e.name == "charge"]
    assert "in raise_from_deep" in entry.error["traceback"]


def _recurse(depth):
    if depth == 0:
        try:
            raise ValueError("a long cause " + "x" * 20_000)
        except ValueError as cause:
            raise KeyError("the innermost frame") from cause
    _recurse(depth - 1)


def test_a_long_traceback_keeps_its_tail_within_16_kib():
    try:
        _recurse(400)
    except KeyError as error:
        whole = "".join(__import__("traceback").format_exception(error))
        text = format_traceback(error)
    assert len(whole.encode()) > MAX_TRACEBACK
    assert len(text.encode()) <= MAX_TRACEBACK
    assert text.startswith("[... the traceback's first ")
    assert text.endswith("KeyError: 'the innermost frame'\n")
    assert whole.endswith(text.split("\n", 1)[1])  # the tail, exactly


def test_a_short_traceback_is_kept_whole():
    try:
        raise_from_deep(1)
    except ValueError as error:
        assert format_traceback(error) == "".join(__import__("traceback").format_exception(error))


def test_each_failed_attempt_is_logged_with_the_file_and_line_that_raised(
    no_codec, workflow_clock, failing, caplog
):
    wf.start("steplogs-failing", None, id="logged")
    with caplog.at_level(logging.WARNING, logger="django_workflows"):
        wf.drain()
    failures = [r for r in caplog.records if "failed (attempt" in r.getMessage()]
    assert len(failures) == 2  # every error still retries: both attempts ran
    first, last = failures
    line = raise_from_deep.__code__.co_firstlineno + 1
    assert f"{conftest.__file__}:{line} in raise_from_deep" in first.getMessage()
    assert "ValueError: card declined for 42" in first.getMessage()
    assert "it is retried" in first.getMessage() and "no more attempts" in last.getMessage()
    assert first.exc_info is not None and first.exc_info[0] is ValueError


def test_the_traceback_starts_at_the_steps_code_not_in_the_engine(
    no_codec, workflow_clock, failing
):
    wf.start("steplogs-failing", None, id="frames")
    wf.drain()
    (entry,) = [e for e in wf.get_status("frames", journal=True).journal if e.name == "charge"]
    lines = entry.error["traceback"].splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert "django_workflows/engine" not in entry.error["traceback"]
    assert lines[1].endswith(", in charge")  # the step's function, its first frame
