"""@workflow refuses a function that cannot be called as `(ctx, input)` when the module loads,
and `manage.py check` (E013) names a registered definition that cannot: otherwise every
instance would fail at run time with a raw TypeError."""

from __future__ import annotations

import pytest

from django_workflows import workflow
from django_workflows.checks import check_definitions
from django_workflows.definitions import Workflow
from django_workflows.engine.registry import registry


def test_a_function_without_the_input_argument_is_refused_at_import():
    with pytest.raises(TypeError) as raised:

        @workflow("no-input")
        def place_order(ctx):
            return None

    message = str(raised.value)
    assert "place_order" in message
    assert "def place_order(ctx, input)" in message
    assert registry.get("no-input", 1) is None


def test_a_function_with_a_third_required_argument_is_refused_at_import():
    with pytest.raises(TypeError, match=r"def charge\(ctx, input\)"):

        @workflow("three-arguments")
        def charge(ctx, input, amount):
            return None


def test_a_required_keyword_only_argument_is_refused_at_import():
    with pytest.raises(TypeError, match="currency"):

        @workflow("keyword-only")
        def charge(ctx, input, *, currency):
            return None


def test_a_class_whose_run_does_not_take_ctx_and_input_is_refused_at_import():
    with pytest.raises(TypeError, match=r"def run\(self, ctx, input\)"):

        @workflow("bad-class")
        class Fulfil:
            def run(self, input):
                return None


def test_a_bare_workflow_decorator_says_to_give_a_name():
    with pytest.raises(TypeError, match=r'use @workflow\("name"\)'):

        @workflow
        def nameless(ctx, input):
            return None


def test_functions_callable_as_ctx_and_input_are_accepted(define):
    @define("plain")
    def plain(ctx, input):
        return None

    @define("with-defaults")
    def with_defaults(ctx, input, note=None, *, debug=False):
        return None

    @define("async-one")
    async def async_one(ctx, input):
        return None

    @define("a-class")
    class AClass:
        def run(self, ctx, input):
            return None

    for name in ("plain", "with-defaults", "async-one", "a-class"):
        assert registry.get(name, 1) is not None


def test_the_check_names_a_registered_definition_that_cannot_take_ctx_and_input():
    def ship(ctx):
        return None

    definition = Workflow(name="registered-by-hand", version=1, run=ship, target=ship)
    registry.register(definition)
    try:
        problems = [p for p in check_definitions() if p.id == "django_workflows.E013"]
    finally:
        registry.unregister(definition)
    assert len(problems) == 1
    assert "'registered-by-hand'" in problems[0].msg
    assert "def ship(ctx, input)" in problems[0].msg


def test_the_check_says_nothing_of_definitions_that_take_ctx_and_input(define):
    @define("fine")
    def fine(ctx, input):
        return None

    assert [p for p in check_definitions() if p.id == "django_workflows.E013"] == []
