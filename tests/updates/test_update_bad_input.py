"""Bad input to updates: refused with a clear error at the declaration of a validator, in
update() before anything is written, and in ctx.wait_for_update()."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

import django_workflows as wf
from django_workflows.models import Signal


@pytest.mark.parametrize(
    ("name", "error", "message"),
    [
        (7, TypeError, "must be a string, not int"),
        (None, TypeError, "must be a string, not NoneType"),
        ("", ValueError, "must not be empty"),
        ("x" * 248, ValueError, "248 characters long; the most it can be is 247"),
        ("a\x00b", ValueError, "NUL"),
    ],
)
def test_a_bad_validator_name_is_refused_at_the_declaration(define, name, error, message):
    @define("declares-validators")
    def declares(ctx, input):
        return None

    with pytest.raises(error, match=message):
        declares.validator(name)
    assert declares.validators == {}


def test_a_validator_that_is_not_callable_is_refused(define):
    @define("not-callable-validator")
    def declares(ctx, input):
        return None

    with pytest.raises(
        TypeError, match="'go' of workflow 'not-callable-validator' must be a function"
    ):
        declares.validator("go")("not a function")


def test_a_second_validator_for_one_name_is_refused(define):
    @define("two-validators")
    def declares(ctx, input):
        return None

    @declares.validator("go")
    def first(status, arg):
        return None

    with pytest.raises(wf.WorkflowDefinitionError, match="validator of update 'go' already"):

        @declares.validator("go")
        def second(status, arg):
            return None

    assert declares.validators == {"go": first}


def test_the_decorator_returns_the_validator_unchanged(define):
    @define("returns-the-validator")
    def declares(ctx, input):
        return None

    def check(status, arg):
        return "no"

    assert declares.validator("go")(check) is check


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("id", "name", "arg", "error", "message"),
    [
        ("target", "change-address", {1, 2}, TypeError, "argument of update"),
        ("target", "change-address", float("nan"), TypeError, "not JSON compliant"),
        ("target", 3, None, TypeError, "update name must be a string"),
        ("target", "", None, ValueError, "must not be empty"),
        ("target", "x" * 248, None, ValueError, "the most it can be is 247"),
        (None, "change-address", None, TypeError, "instance id must be a string"),
        ("x" * 256, "change-address", None, ValueError, "instance id is 256 characters"),
    ],
)
def test_bad_input_to_update_is_refused_before_anything_is_written(
    fulfil_order, workflow_clock, id, name, arg, error, message
):
    wf.start(fulfil_order, {}, id="target")
    with pytest.raises(error, match=message):
        wf.update(id, name, arg)
    assert not Signal.objects.exists()


@pytest.mark.django_db
def test_a_bad_name_given_to_wait_for_update_fails_the_instance(define, workflow_clock):
    @define("bad-wait-name")
    def bad(ctx, input):
        return ctx.wait_for_update(input)

    wf.start(bad, 12, id="number")
    wf.start(bad, "", id="empty")
    wf.drain()
    assert wf.get_status("number").error["message"] == "An update name must be a string, not int."
    assert wf.get_status("empty").error["message"] == "An update name must not be empty."


@pytest.mark.django_db
def test_an_update_of_a_version_this_application_does_not_register_is_not_found(
    fulfil_order, define, workflow_clock
):
    @define("retired", version=1)
    def retired(ctx, input):
        return ctx.wait_for_update("go")

    wf.start(retired, None, id="orphan")
    from django_workflows.engine.registry import registry

    registry.unregister(retired)
    with pytest.raises(wf.WorkflowNotFoundError, match="'retired' version 1"):
        wf.update("orphan", "go", 1)
    assert not Signal.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_update_inside_a_serializable_transaction(fulfil_order, workflow_clock):
    wf.start(fulfil_order, {}, id="strict")
    address = {"postcode": "1000"}
    if connection.vendor == "postgresql":
        with pytest.raises(TypeError, match="SERIALIZABLE"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
            wf.update("strict", "change-address", address)
        assert not Signal.objects.exists()
    with transaction.atomic():  # READ COMMITTED, and MySQL's REPEATABLE READ, are fine
        assert wf.update("strict", "change-address", address).accepted
    assert Signal.objects.count() == 1
