"""Bad input to `manage.py workflows`: a CommandError naming what is wrong, before anything is
read or done."""

from __future__ import annotations

import pytest
from django.core.management import CommandError

import django_workflows as wf

from .conftest import run

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "args, message",
    [
        (["list", "--status", "stuck"], "Unknown status 'stuck'; use one of pending, running"),
        (["list", "--status", "failed,stuck"], "Unknown status 'stuck'"),
        (["list", "--workflow", "no-such"], "Unknown workflow 'no-such': this deployment"),
        (["list", "--queue", "no-such"], "Unknown queue 'no-such': no registered workflow"),
        (["list", "--queue", "bad queue"], "--queue 'bad queue' must be 1 to 100 letters"),
        (["list", "--limit", "0"], "limit must be an integer from 1 to 10000, not 0"),
        (["list", "--offset", "-1"], "offset must be an integer from 0"),
        (["list", "--tag", "x" * 200], "tag is 200 characters long"),
        (["list", "--subject", "auth.group"], "--subject 'auth.group' must be"),
        (["list", "--subject", "shop.nothing:1"], "no installed model is 'shop.nothing'"),
        (["list", "--subject", "auth.group:abc"], "--subject 'auth.group:abc': "),
        (["list", "--json", "--quiet"], "--json and --quiet go separately"),
        (["list", "--workflow", "a\x00b"], "--workflow .*NUL"),
        (["list", "--parent", "a\x00b"], "--parent .*NUL"),
        (["list", "--schedule", "x" * 300], "--schedule is 300 characters long"),
        (["show", "a\x00b"], "The instance id .*NUL"),
        (["list", "--limit", "many"], "argument --limit: invalid int value: 'many'"),
        (["show", "x" * 300], "The instance id is 300 characters long"),
        (["bogus"], "invalid choice: 'bogus'"),
        ([], "the following arguments are required: SUBCOMMAND"),
    ],
)
def test_bad_input_is_a_command_error_naming_it(instances, args, message):
    with pytest.raises(CommandError, match=message.replace("(", r"\(")):
        run(*args)


@pytest.mark.parametrize(
    "args, message",
    [
        (["cancel", "order-1", "--reason", "x" * 70000], "--reason is 70000 characters long"),
        (["terminate", "order-1", "--reason", "a\x00b"], "NUL"),
        (["retry", "pay-1", "--timeout", "soon"], "--timeout"),
        (["resume", "gate-1", "--breakpoint", ""], "--breakpoint must name the breakpoint"),
        (["delete", "done-1", "x" * 300], "The instance id is 300 characters long"),
        (["cancel", "order-1", ""], "An instance id must not be empty"),
        (["retry", "pay-1", "--timeout", "1h", "--no-timeout"], "not allowed with argument"),
        (["cancel"], "the following arguments are required: ID"),
    ],
)
def test_a_bad_option_or_id_stops_before_any_id_is_acted_on(instances, args, message):
    before = {i: wf.get_status(i) for i in ("order-1", "pay-1", "gate-1", "done-1")}
    with pytest.raises(CommandError, match=message):
        run(*args)
    assert {i: wf.get_status(i) for i in before} == before


def test_a_workflow_no_longer_registered_is_known_by_its_stored_instances(instances):
    from django_workflows.engine.registry import registry

    registry.unregister(registry.get("cli-signup", 1))
    status, out, err = run("list", "-q", "--workflow", "cli-signup")
    assert (status, out.split()) == (0, ["signup-1"])


def test_a_queue_of_the_code_is_known_without_instances(define, workflow_clock):
    define("cli-batch", queue="batch")(lambda ctx, input: None)
    assert run("list", "--queue", "batch") == (0, "", "No instances match.\n")
