"""Debounced starts: while the instance with an id is pending and has run no step, a start with
`debounce` replaces its input and moves its start, at most until `debounce_timeout` after the
first of them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction

import django_workflows as wf
from django_workflows.models import WorkflowInstance

pytestmark = pytest.mark.django_db


@pytest.fixture
def reindex(define):
    @define("reindex")
    def flow(ctx, input):
        return ctx.step("index", lambda step: input["rev"])

    return flow


def stored(id: str) -> WorkflowInstance:
    return WorkflowInstance.objects.get(pk=id)


def test_a_debounced_start_waits_for_the_debounce_before_it_runs(reindex, workflow_clock):
    started = wf.start(reindex, {"rev": 1}, id="doc-1", debounce="5s")
    assert started == wf.StartResult("doc-1", "reindex", 1, True, "pending", debounced=False)
    assert stored("doc-1").wake_at == workflow_clock.now() + timedelta(seconds=5)
    assert wf.drain() == 0
    workflow_clock.advance("5s")
    wf.drain()
    assert wf.result("doc-1") == 1


def test_a_second_start_replaces_the_input_and_moves_the_start(reindex, workflow_clock):
    wf.start(reindex, {"rev": 1}, id="doc-1", debounce="5s")
    workflow_clock.advance("3s")
    again = wf.start(reindex, {"rev": 2}, id="doc-1", debounce="5s")
    assert (again.created, again.debounced, again.status) == (False, True, "pending")
    assert stored("doc-1").wake_at == workflow_clock.now() + timedelta(seconds=5)
    assert wf.get_status("doc-1").input == {"rev": 2}
    workflow_clock.advance("3s")
    assert wf.drain() == 0  # 6 s after the first start, 3 s after the last
    workflow_clock.advance("2s")
    wf.drain()
    assert wf.result("doc-1") == 2
    assert WorkflowInstance.objects.count() == 1


def test_the_debounce_timeout_caps_the_start_after_the_first_of_them(reindex, workflow_clock):
    first = workflow_clock.now()
    for rev in range(1, 8):
        wf.start(reindex, {"rev": rev}, id="doc-1", debounce="5s", debounce_timeout="12s")
        workflow_clock.advance("3s")
    # Seven starts 3 s apart: the last at 18 s, but the start is held to 12 s after the first.
    assert stored("doc-1").wake_at == first + timedelta(seconds=12)
    wf.drain()
    assert wf.result("doc-1") == 7


def test_a_start_after_the_instance_began_is_an_ordinary_start_of_its_id(reindex, workflow_clock):
    wf.start(reindex, {"rev": 1}, id="doc-1", debounce="5s")
    workflow_clock.advance("5s")
    wf.drain()
    later = wf.start(reindex, {"rev": 2}, id="doc-1", debounce="5s")
    assert (later.created, later.debounced, later.status) == (False, False, "completed")
    assert wf.get_status("doc-1").input == {"rev": 1}
    assert wf.result("doc-1") == 1


def test_a_start_without_debounce_of_a_debounced_id_keeps_its_id_conflict(reindex, workflow_clock):
    wf.start(reindex, {"rev": 1}, id="doc-1", debounce="5s")
    with pytest.raises(wf.WorkflowIdConflictError):
        wf.start(reindex, {"rev": 2}, id="doc-1")
    assert wf.get_status("doc-1").input == {"rev": 1}


def test_a_debounced_start_of_an_id_another_workflow_holds_raises_an_id_conflict(
    reindex, define, workflow_clock
):
    @define("other")
    def other(ctx, input):
        return None

    wf.start(other, {"rev": 1}, id="doc-1")
    with pytest.raises(wf.WorkflowIdConflictError):
        wf.start(reindex, {"rev": 2}, id="doc-1", debounce="5s")
    assert wf.get_status("doc-1").workflow == "other"


def test_the_workflow_sets_the_debounce_of_its_starts(define, workflow_clock):
    @define("digest", debounce="1m", debounce_timeout="10m")
    def digest(ctx, input):
        return input

    first = workflow_clock.now()
    wf.start(digest, 1, id="digest-1")
    workflow_clock.advance("30s")
    again = wf.start(digest, 2, id="digest-1")
    assert again.debounced is True
    assert stored("digest-1").wake_at == workflow_clock.now() + timedelta(minutes=1)
    for _ in range(30):
        workflow_clock.advance("30s")
        wf.start(digest, 3, id="digest-1")
    assert stored("digest-1").wake_at == first + timedelta(minutes=10)
    # A start's own debounce overrides the workflow's.
    wf.start(digest, 4, id="digest-2", debounce="5s")
    assert stored("digest-2").wake_at == workflow_clock.now() + timedelta(seconds=5)


def test_a_start_without_an_id_of_a_debounced_workflow_starts_at_once(define, workflow_clock):
    @define("digest", debounce="1m")
    def digest(ctx, input):
        return input

    started = wf.start(digest, 1)
    assert started.created and not started.debounced
    assert stored(started.id).wake_at == workflow_clock.now()


def test_a_debounced_start_in_a_transaction_that_rolls_back_changes_nothing(
    reindex, workflow_clock
):
    wf.start(reindex, {"rev": 1}, id="doc-1", debounce="5s")
    before = stored("doc-1").wake_at
    workflow_clock.advance("2s")
    with pytest.raises(RuntimeError), transaction.atomic():
        assert wf.start(reindex, {"rev": 2}, id="doc-1", debounce="5s").debounced
        raise RuntimeError("the business transaction fails")
    assert wf.get_status("doc-1").input == {"rev": 1}
    assert stored("doc-1").wake_at == before


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"debounce": "5s"}, "debounce needs an id"),
        ({"id": "doc-1", "debounce": "soon"}, "debounce"),
        ({"id": "doc-1", "debounce": 0}, "debounce"),
        ({"id": "doc-1", "debounce": "5s", "debounce_timeout": "-1s"}, "debounce_timeout"),
        ({"id": "doc-1", "debounce_timeout": "1m"}, "debounce_timeout needs a debounce"),
    ],
)
def test_bad_debounce_arguments_are_refused_before_anything_is_written(
    reindex, workflow_clock, options, message
):
    with pytest.raises(ValueError, match=message):
        wf.start(reindex, {"rev": 1}, **options)
    assert not WorkflowInstance.objects.exists()


def test_the_workflow_refuses_a_bad_debounce(define):
    with pytest.raises(ValueError, match="debounce"):
        define("bad", debounce="never")(lambda ctx, input: None)
    with pytest.raises(ValueError, match="debounce_timeout needs a debounce"):
        define("bad", debounce_timeout="1m")(lambda ctx, input: None)
