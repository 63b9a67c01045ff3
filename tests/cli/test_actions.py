"""`manage.py workflows cancel|terminate|retry|delete|resume ID...`: each id through the client
with its rules, a line (or a JSON outcome) per id, and exit status 1 when any was refused or
unknown while the others were still done."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

import django_workflows as wf

from .conftest import run

pytestmark = pytest.mark.django_db


def test_cancel_requests_a_cancel_that_a_worker_applies_with_the_reason(instances):
    assert run("cancel", "order-1", "--reason", "customer asked") == (
        0,
        "order-1: cancel requested; a worker applies it.\n",
        "",
    )
    assert wf.get_status("order-1").cancel_requested
    wf.drain()
    cancelled = wf.get_status("order-1")
    assert cancelled.status == "cancelled"
    assert cancelled.error["message"] == "customer asked"


def test_without_a_reason_the_cancel_records_where_it_came_from(instances):
    run("cancel", "order-1")
    wf.drain()
    message = wf.get_status("order-1").error["message"]
    assert message.startswith("Cancelled with manage.py workflows cancel")


@pytest.mark.parametrize("operation", ["cancel", "terminate"])
def test_the_reason_help_shows_the_default_the_command_records(instances, operation):
    import getpass

    from django.core.management import load_command_class

    command = load_command_class("django_workflows", "workflows")
    parser = command.create_parser("manage.py", "workflows")
    actions = parser._subparsers._group_actions[0].choices  # noqa: SLF001 - argparse's own
    reason = next(a for a in actions[operation]._actions if a.dest == "reason")  # noqa: SLF001
    run(operation, "order-1")
    wf.drain()
    recorded = wf.get_status("order-1").error["message"]
    assert f'(default "{recorded.replace(getpass.getuser(), "<user>")}")' in reason.help


def test_each_id_gets_its_line_and_a_refused_or_unknown_one_exits_1(instances):
    status, out, err = run("cancel", "order-1", "done-1", "nope", "signup-1")
    assert status == 1
    assert out.splitlines() == [
        "order-1: cancel requested; a worker applies it.",
        "signup-1: cancel requested; a worker applies it.",
    ]
    assert err.splitlines() == [
        "Refused: done-1 is completed: only unfinished instances can be cancelled.",
        "No workflow instance has the id 'nope'.",
    ]
    assert wf.get_status("signup-1").cancel_requested  # the ids after a refusal still ran


def test_a_second_cancel_is_refused_and_terminate_still_stops_it(instances):
    run("cancel", "order-1")
    assert run("cancel", "order-1") == (
        1,
        "",
        "Refused: order-1 is being cancelled already.\n",
    )
    assert run("terminate", "order-1", "--reason", "stuck") == (
        0,
        "order-1: terminate requested; a worker applies it.\n",
        "",
    )
    wf.drain()
    assert wf.get_status("order-1").status == "cancelled"
    assert run("terminate", "order-1")[0] == 1


def test_retry_runs_a_failed_instance_again_and_refuses_another_status(instances):
    status, out, err = run("retry", "pay-1", "order-1")
    assert status == 1
    assert out == "pay-1: retried; it is pending.\n"
    assert err == (
        "Refused: order-1 is suspended: only failed and compensation_failed instances can be "
        "retried.\n"
    )
    assert wf.get_status("pay-1").status == "pending"


def test_retry_takes_a_new_timeout_or_none(define, workflow_clock):
    define("cli-slow", timeout="1m")(lambda ctx, input: ctx.sleep("long", "1h"))
    wf.start("cli-slow", None, id="slow-1")
    wf.drain()
    workflow_clock.advance("2m")
    wf.drain()
    assert wf.get_status("slow-1").status == "failed"
    status, out, err = run("retry", "slow-1")
    assert status == 1 and "ran past its run timeout" in err
    assert run("retry", "slow-1", "--timeout", "2h")[0] == 0
    assert wf.get_status("slow-1").deadline == workflow_clock.now() + timedelta(hours=2)


def test_retry_without_a_timeout_clears_the_deadline(define, workflow_clock):
    define("cli-slow", timeout="1m")(lambda ctx, input: ctx.sleep("long", "1h"))
    wf.start("cli-slow", None, id="slow-2")
    wf.drain()
    workflow_clock.advance("2m")
    wf.drain()
    assert run("retry", "slow-2", "--no-timeout")[0] == 0
    assert wf.get_status("slow-2").deadline is None


def test_delete_deletes_finished_instances_and_unfinished_ones_only_with_force(instances):
    status, out, err = run("delete", "done-1", "order-1")
    assert status == 1
    assert out == "done-1: deleted.\n"
    assert err == (
        "Refused: order-1 is suspended: delete an unfinished instance with force=True "
        "(its compensations do not run).\n"
    )
    assert wf.get_status("done-1") is None
    assert run("delete", "order-1", "--force") == (0, "order-1: deleted.\n", "")
    assert wf.get_status("order-1") is None


def test_resume_continues_an_instance_at_its_breakpoint(instances):
    assert run("resume", "gate-1") == (0, "gate-1: resumed at breakpoint 'approve'.\n", "")
    wf.drain()
    assert wf.get_status("gate-1").status == "completed"
    status, out, err = run("resume", "gate-1", "order-1")
    assert status == 1 and out == ""
    finished, elsewhere = err.splitlines()
    assert finished == "Refused: gate-1 is completed: it is at no breakpoint."
    assert elsewhere == "Refused: order-1 is not waiting at a breakpoint."


def test_resume_names_the_breakpoint(instances):
    status, out, err = run("resume", "gate-1", "--breakpoint", "other")
    assert status == 1
    assert "not at breakpoint 'other'" in err
    assert run("resume", "gate-1", "--breakpoint", "approve")[0] == 0


def test_json_gives_each_ids_outcome_and_the_instance_the_client_returned(instances):
    status, out, err = run("cancel", "--json", "order-1", "done-1", "nope")
    assert (status, err) == (1, "")
    done, refused, unknown = json.loads(out)
    assert done["id"] == "order-1" and done["operation"] == "cancel"
    assert done["outcome"] == "done"
    assert done["message"] == "order-1: cancel requested; a worker applies it."
    assert done["instance"]["cancel_requested"] is True
    assert done["instance"]["updated_at"].endswith("+00:00")
    assert refused["outcome"] == "refused" and refused["instance"]["status"] == "completed"
    assert unknown == {
        "id": "nope",
        "operation": "cancel",
        "outcome": "not_found",
        "message": "No workflow instance has the id 'nope'.",
        "instance": None,
    }
    [resumed] = json.loads(run("resume", "--json", "gate-1")[1])
    assert (resumed["outcome"], resumed["breakpoint"], resumed["instance"]) == (
        "done",
        "approve",
        None,
    )
    [retried] = json.loads(run("retry", "--json", "pay-1")[1])
    assert retried["instance"]["status"] == "pending"


def test_an_id_given_twice_is_acted_on_once(instances):
    assert run("delete", "done-1", "done-1") == (0, "done-1: deleted.\n", "")
