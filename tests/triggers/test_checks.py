"""The system checks of start_on and signal_on: E009, E010, E011."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db.models.signals import post_save
from django.dispatch import Signal

from django_workflows import Concurrency, RateLimit, signal_on, start_on
from django_workflows.triggers.checks import check_triggers
from tests.testapp.models import Purchase

placed = Signal()


def ids(problems):
    return sorted(problem.id for problem in problems)


def test_a_registry_with_good_mappings_has_no_problems(define):
    @start_on(placed, id="x", input=None, concurrency_key=lambda **kw: "k")
    @signal_on(placed, signal="a", payload=None)
    @signal_on(placed, signal="b", payload=None)
    @define("trigger-good", concurrency=Concurrency(limit=1, key=lambda input: "k"))
    def flow(ctx, input):
        return None

    assert ids(check_triggers()) == []


def test_one_workflow_mapping_one_signal_and_sender_twice_is_e009(define):
    @start_on(post_save, sender=Purchase, id="a", input=None)
    @start_on(post_save, sender="testapp.Purchase", id="b", input=None)
    @signal_on(placed, signal="s", payload=1)
    @signal_on(placed, signal="s", payload=2)
    @define("trigger-twice")
    def flow(ctx, input):
        return None

    problems = check_triggers()
    assert ids(problems) == ["django_workflows.E009", "django_workflows.E009"]
    messages = " ".join(problem.msg for problem in problems)
    assert "start_on(post_save, sender=testapp.Purchase) of workflow 'trigger-twice'" in messages
    assert "signal_on(tests.triggers.test_checks.placed, signal='s') of workflow" in messages


def test_two_versions_mapping_one_signal_are_fine(define):
    for version in (1, 2):

        @start_on(placed, id="a", input=None)
        @define("trigger-versions", version=version)
        def flow(ctx, input):
            return None

    assert ids(check_triggers()) == []


def test_a_key_for_a_workflow_without_a_per_key_limit_is_e010(define):
    @start_on(placed, id="a", input=None, concurrency_key="k", rate_limit_key="r")
    @define(
        "trigger-keys",
        concurrency=Concurrency(limit=1),
        rate_limit=RateLimit(max=1, duration="1s", key=lambda input: "r"),
    )
    def flow(ctx, input):
        return None

    problems = check_triggers()
    assert ids(problems) == ["django_workflows.E010"]
    assert (
        "gives a concurrency_key, but the workflow has no Concurrency with a key" in problems[0].msg
    )


@pytest.mark.django_db
def test_a_sender_label_that_names_no_model_is_e011_and_fails_check(define, settings):
    from django.apps import apps

    # Declared as a settings module would before the registry is ready: not connected.
    apps.ready = False
    try:

        @start_on(post_save, sender="testapp.Missing", id="a", input=None)
        @define("trigger-missing-model")
        def flow(ctx, input):
            return None

    finally:
        apps.ready = True
    assert ids(check_triggers()) == ["django_workflows.E011"]
    with pytest.raises(SystemCheckError, match="E011"):
        call_command("check")
