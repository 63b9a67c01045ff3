"""manage.py checkworkflows --replay: the stored journals replayed against changed code."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

import django_workflows as wf
from django_workflows.engine.registry import registry
from django_workflows.models import JournalEntry

from .conftest import effect, order_v1, ran, rows

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def check(*args: str) -> tuple[int, list[str]]:
    """Run checkworkflows --replay: its exit status and its output's lines."""
    out = io.StringIO()
    try:
        call_command("checkworkflows", "--replay", *args, stdout=out)
        status = 0
    except SystemExit as exit:
        status = int(exit.code or 0)
    return status, out.getvalue().splitlines()


def named(lines: list[str]) -> list[str]:
    """The instance ids the mismatch lines name (the summary line left out)."""
    return sorted(line.split(" ", 1)[0] for line in lines if not line.startswith("Replayed "))


def renamed(ctx, input):
    ctx.step("reserve", effect("reserve"))
    ctx.step("bill", effect("bill"))  # was "charge"
    ctx.sleep("cool-off", "1h")
    ctx.step("ship", effect("ship"))


def reordered(ctx, input):
    ctx.step("charge", effect("charge"))
    ctx.step("reserve", effect("reserve"))
    ctx.sleep("cool-off", "1h")
    ctx.step("ship", effect("ship"))


def removed(ctx, input):
    ctx.step("reserve", effect("reserve"))
    ctx.sleep("cool-off", "1h")
    ctx.step("ship", effect("ship"))


def now_a_sleep(ctx, input):
    ctx.step("reserve", effect("reserve"))
    ctx.sleep("charge", "1m")
    ctx.sleep("cool-off", "1h")
    ctx.step("ship", effect("ship"))


def appended(ctx, input):
    ctx.step("reserve", effect("reserve"))
    ctx.step("charge", effect("charge"))
    ctx.sleep("cool-off", "1h")
    ctx.step("ship", effect("ship"))
    ctx.step("notify", effect("notify"))  # after the frontier: the instances reach it later


def new_body(ctx, input):
    ctx.step("reserve", effect("reserve-v2", result="another"))
    ctx.step("charge", lambda step: 1 / 0)  # a body that would fail, never run by the check
    ctx.sleep("cool-off", "1h")
    ctx.step("ship", effect("ship"))


@pytest.mark.parametrize("code", [renamed, reordered, removed, now_a_sleep])
def test_a_breaking_change_exits_1_naming_exactly_the_broken_instances(parked, deploy, code):
    before = rows()
    deploy("order", code)
    status, lines = check()
    assert status == 1
    assert named(lines) == ["order-1", "order-2"]  # not signup-1, whose code did not change
    assert lines[-1] == "Replayed 3 instance(s): 2 do not match this code."
    assert all(" order@1: " in line for line in lines[:-1])
    assert rows() == before  # nothing written
    assert not ran  # no step function ran


def test_each_line_says_the_first_mismatch(parked, deploy):
    deploy("order", renamed)
    assert (
        '"charge", "cool-off" were recorded by an earlier run but not reached before the new '
        'step "bill"'
    ) in check()[1][0]
    deploy("order", reordered)
    assert '"charge" was journaled at position 1 and is now reached at 0' in check()[1][0]
    deploy("order", now_a_sleep)
    assert '"charge" was recorded as a step and is now reached as a sleep' in check()[1][0]


@pytest.mark.parametrize("code", [appended, new_body])
def test_a_compatible_change_exits_0(parked, deploy, code):
    before = rows()
    deploy("order", code)
    assert check() == (0, ["Replayed 3 instance(s): all match this code."])
    assert rows() == before
    assert not ran


def test_an_instance_parked_at_a_signal_is_checked_up_to_its_wait(parked, deploy):
    def signup_renamed(ctx, input):
        ctx.step("create-user", effect("create"))
        ctx.wait_for_signal("confirmation", "confirmed", key=input["user"])

    deploy("signup", signup_renamed)
    wf.signal("confirmed", key="u1", payload={"ok": True})  # arrived: the check does not read it
    before = rows()
    status, lines = check()
    assert (status, named(lines)) == (1, ["signup-1"])
    assert rows() == before


def test_the_instances_still_run_on_the_compatible_code_afterwards(parked, deploy, workflow_clock):
    deploy("order", appended)
    assert check()[0] == 0
    workflow_clock.advance("2h")
    wf.drain()
    assert wf.get_status("order-1").status == "completed"
    assert ran == {"ship": 2, "notify": 2}  # the worker ran them, the check ran none


def test_workflow_checks_that_workflow_only(parked, deploy):
    deploy("order", renamed)
    assert check("--workflow", "signup") == (0, ["Replayed 1 instance(s): all match this code."])
    status, lines = check("--workflow", "order")
    assert (status, named(lines)) == (1, ["order-1", "order-2"])


def test_an_unknown_workflow_is_a_command_error(parked):
    with pytest.raises(CommandError, match="No workflow 'ordr' is registered"):
        check("--workflow", "ordr")


def test_limit_checks_at_most_n_instances(parked, deploy):
    deploy("order", renamed)
    status, lines = check("--limit", "1")
    assert (status, named(lines)) == (1, ["order-1"])
    assert lines[-1] == "Replayed 1 instance(s): 1 do not match this code."
    assert check("--limit", "10")[1][-1] == "Replayed 3 instance(s): 2 do not match this code."
    with pytest.raises(CommandError, match="limit must be 1 or more"):
        check("--limit", "0")


def test_batches_cover_every_instance(parked, deploy):
    from django_workflows.engine.replaycheck import check_instances

    deploy("order", renamed)
    outcomes = list(check_instances(batch_size=1))
    assert [o.id for o in outcomes] == ["order-1", "order-2", "signup-1"]
    assert [o.problem is not None for o in outcomes] == [True, True, False]
    assert [o.id for o in check_instances(batch_size=2, limit=3)] == [
        "order-1",
        "order-2",
        "signup-1",
    ]


def test_include_finished_adds_the_instances_finished_in_the_last_days(
    define, deploy, workflow_clock
):
    define("order")(order_v1)
    wf.start("order", {}, id="old-finished")
    wf.drain()
    workflow_clock.advance("2h")
    wf.drain()
    workflow_clock.advance("3d")  # old-finished finished 3 days ago
    wf.start("order", {}, id="new-finished")
    wf.drain()
    workflow_clock.advance("2h")
    wf.drain()
    assert wf.get_status("new-finished").status == "completed"
    deploy("order", renamed)
    assert check() == (0, ["Replayed 0 instance(s): all match this code."])
    status, lines = check("--include-finished", "1")
    assert (status, named(lines)) == (1, ["new-finished"])
    status, lines = check("--include-finished", "5")
    assert (status, named(lines)) == (1, ["new-finished", "old-finished"])
    with pytest.raises(CommandError, match="include_finished must be 0 days or more"):
        check("--include-finished", "-1")


def test_a_finished_instance_whose_code_returns_before_its_journal_ends_is_reported(
    define, deploy, workflow_clock
):
    define("order")(order_v1)
    wf.start("order", {}, id="done")
    wf.drain()
    workflow_clock.advance("2h")
    wf.drain()

    def returns_early(ctx, input):
        ctx.step("reserve", effect("reserve"))
        return "nothing else"

    deploy("order", returns_early)
    status, lines = check("--include-finished", "1")
    assert status == 1
    expected = (
        '"charge", "cool-off", "ship" were journaled by an earlier run but not reached: the '
        "code returned first."
    )
    assert expected in lines[0]


def test_code_that_no_longer_takes_a_journaled_result_is_reported(parked, deploy):
    def expects_a_dict(ctx, input):
        reservation = ctx.step("reserve", effect("reserve"))
        ctx.step("charge", effect("charge"), retry={"attempts": reservation["attempts"]})
        ctx.sleep("cool-off", "1h")

    deploy("order", expects_a_dict)
    status, lines = check()
    assert (status, named(lines)) == (1, ["order-1", "order-2"])
    assert '"charge", "cool-off" were journaled' in lines[0]
    assert "the code raised TypeError: string indices must be integers" in lines[0]


def test_an_instance_whose_version_is_not_registered_is_reported(parked):
    registry.unregister(registry.get("order", 1))
    status, lines = check()
    assert (status, named(lines)) == (1, ["order-1", "order-2"])
    assert "order@1 is not registered in this deployment" in lines[0]


def test_a_failed_step_raises_again_and_a_compensating_instance_is_checked(
    define, deploy, workflow_clock
):
    def undo(result, step):
        raise RuntimeError("the refund service is down")

    def fails(ctx, input):
        ctx.step(
            "reserve", effect("reserve"), compensate=undo, compensate_retry=wf.Retry(attempts=3)
        )
        ctx.step("charge", lambda step: 1 / 0, retry=wf.Retry(attempts=1))
        ctx.step("ship", effect("ship"))

    define("payment")(fails)
    wf.start("payment", {}, id="compensating")
    wf.drain()
    assert wf.get_status("compensating").status == "compensating"  # its undo waits to retry
    ran.clear()
    assert check() == (0, ["Replayed 1 instance(s): all match this code."])

    def renamed_before_the_failure(ctx, input):
        ctx.step("reserve-stock", effect("reserve"), compensate=undo)
        ctx.step("charge", lambda step: 1 / 0)

    deploy("payment", renamed_before_the_failure)
    status, lines = check()
    assert (status, named(lines)) == (1, ["compensating"])
    assert not ran


@pytest.mark.parametrize("document", ["charged", ["charged", 1]])
def test_a_journal_entry_that_is_not_an_object_is_reported_and_the_rest_checked(parked, document):
    # order-1 comes first in id order: the instances after it are still replayed.
    JournalEntry.objects.filter(instance_id="order-1", name="charge").update(document=document)
    status, lines = check()
    assert (status, named(lines)) == (1, ["order-1"])
    assert lines[0].startswith('order-1 order@1: its journal entry "charge" is not a JSON ')
    assert f"but a {type(document).__name__}" in lines[0]
    assert lines[-1] == "Replayed 3 instance(s): 1 do not match this code."
    assert not ran


def test_nothing_to_check_exits_0():
    assert check() == (0, ["Replayed 0 instance(s): all match this code."])


def test_without_replay_it_runs_the_system_checks(settings):
    out = io.StringIO()
    call_command("checkworkflows", stdout=out)
    assert "System check identified no issues" in out.getvalue()
    settings.USE_TZ = False
    from django.core.management.base import SystemCheckError

    with pytest.raises(SystemCheckError, match="django_workflows.E002"):
        call_command("checkworkflows", stdout=io.StringIO(), stderr=io.StringIO())
    with pytest.raises(CommandError, match="go with --replay"):
        call_command("checkworkflows", "--limit", "3")


@pytest.mark.parametrize("command", [["checkworkflows", "--replay"], ["exportworkflow", "x"]])
def test_a_database_without_the_tables_is_a_command_error(tmp_path, command):
    # A fresh SQLite file (the settings put it in TMPDIR): no migration ever ran there.
    environment = {**os.environ, "DB": "sqlite", "TMPDIR": str(tmp_path), "CODEC": ""}
    environment["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    finished = subprocess.run(
        [sys.executable, "-m", "django", *command],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert finished.returncode == 1
    assert "CommandError: The django_workflows tables on database 'default' are missing" in (
        finished.stderr
    )
    assert "manage.py migrate django_workflows" in finished.stderr
    assert "Traceback" not in finished.stderr
