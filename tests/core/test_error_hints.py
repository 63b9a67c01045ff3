"""Error messages that say how to fix what they name: a model instance in an input, a step's
function that takes the wrong arguments, a bad sleep duration, an unmigrated database, a
Retry's repr."""

from __future__ import annotations

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows import Retry
from django_workflows.checks import check_definitions
from django_workflows.errors import WorkflowError
from tests.testapp.models import Order


@pytest.mark.django_db
def test_a_model_instance_in_the_input_names_its_place_and_suggests_its_pk():
    order = Order.objects.create(id="o-1")
    with pytest.raises(TypeError) as raised:
        wf.start("flaky", {"order": order, "note": "gift"}, id="with-a-model")
    message = str(raised.value)
    assert 'The input of workflow "flaky"' in message
    assert "value['order'] is a model instance (testapp.Order)" in message
    assert "order.pk" in message
    assert wf.get_status("with-a-model") is None


@pytest.mark.django_db
def test_another_value_that_is_not_json_names_its_place_and_type():
    with pytest.raises(TypeError) as raised:
        wf.start("flaky", {"items": [1, {2, 3}]}, id="with-a-set")
    assert "value['items'][1] is a set" in str(raised.value)


@pytest.mark.django_db
def test_a_step_function_without_the_step_argument_says_what_it_takes(define, workflow_clock):
    @define("step-takes-nothing")
    def takes_nothing(ctx, input):
        return ctx.step("charge", lambda: 1)

    wf.start("step-takes-nothing", None, id="takes-nothing")
    wf.drain()
    message = wf.get_status("takes-nothing").error["message"]
    assert message.startswith(
        'The function of step "charge" must take 1 argument (lambda step: ...); '
    )
    assert message.endswith("takes_nothing.<locals>.<lambda> takes no argument.")


@pytest.mark.django_db
def test_a_compensation_with_one_argument_says_what_it_takes(define, workflow_clock):
    @define("compensation-takes-one")
    def takes_one(ctx, input):
        return ctx.step("charge", lambda step: 1, compensate=lambda result: None)

    wf.start("compensation-takes-one", None, id="takes-one")
    wf.drain()
    message = wf.get_status("takes-one").error["message"]
    assert message.startswith(
        'The compensation of step "charge" must take 2 arguments (lambda result, step: ...); '
    )
    assert message.endswith("<lambda> takes only 1 argument (result).")


@pytest.mark.django_db
def test_a_bad_sleep_duration_names_the_sleep_and_the_forms(define, workflow_clock):
    @define("sleeps-badly")
    def sleeps_badly(ctx, input):
        ctx.sleep("cool-down", "10 minutes")

    wf.start("sleeps-badly", None, id="sleeps-badly")
    wf.drain()
    message = wf.get_status("sleeps-badly").error["message"]
    assert 'Sleep "cool-down"' in message
    assert '"10m"' in message  # what to write instead


def test_a_literal_bad_sleep_duration_is_refused_by_the_check_before_any_step_runs(define):
    @define("sleeps-badly-checked")
    def sleeps_badly(ctx, input):
        ctx.step("charge", lambda step: 1)
        ctx.sleep("cool-down", "10 minutes")
        ctx.wait_for_any("either", late=ctx.timer("2 hours"))

    problems = [p.msg for p in check_definitions() if p.id == "django_workflows.E014"]
    assert len(problems) == 2
    assert "'sleeps-badly-checked'" in problems[0]
    assert 'ctx.sleep("cool-down")' in problems[0] and '"10m"' in problems[0]
    assert "timer" in problems[1] and '"2h"' in problems[1]


def test_the_check_says_nothing_of_good_or_computed_durations(define):
    @define("sleeps-well")
    def sleeps_well(ctx, input):
        ctx.sleep("short", "10m")
        ctx.sleep("seconds", 30)
        ctx.sleep("computed", input["delay"])
        ctx.wait_for_any("either", late=ctx.timer(duration="1h30m"))

    assert [p for p in check_definitions() if p.id == "django_workflows.E014"] == []


@pytest.mark.django_db(transaction=True)
def test_start_on_an_unmigrated_database_says_to_run_migrate():
    table = "django_workflows_workflowinstance"
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {table} RENAME TO {table}_away")
    try:
        with pytest.raises(WorkflowError) as raised:
            wf.start("flaky", {}, id="unmigrated")
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE {table}_away RENAME TO {table}")
    message = str(raised.value)
    assert "manage.py migrate" in message
    assert "'default'" in message
    assert raised.value.__cause__ is not None  # the database's own error, kept


def test_a_retrys_repr_shows_only_the_fields_it_sets():
    assert repr(Retry(attempts=5, delay="2s")) == "Retry(attempts=5, delay='2s')"
    assert repr(Retry()) == "Retry()"
