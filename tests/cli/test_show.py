"""`manage.py workflows show ID`: one instance's fields, waits, values, tags, attributes and
error, with `--journal` its journal's entries and with `--children` its children."""

from __future__ import annotations

import json

import pytest

import django_workflows as wf

from .conftest import run

pytestmark = pytest.mark.django_db


def fields(out: str) -> dict[str, str]:
    """The `Name: value` lines of the output, by name."""
    found = {}
    for line in out.splitlines():
        if not line.startswith(" ") and ": " in line:
            name, value = line.split(":", 1)
            found[name] = value.strip()
    return found


def test_show_prints_the_instance_field_by_field(instances):
    status, out, err = run("show", "order-1")
    assert (status, err) == (0, "")
    shown = fields(out)
    assert shown["Id"] == "order-1"
    assert shown["Workflow"] == "cli-order@1"
    assert shown["Status"] == "suspended"
    assert shown["Queue"] == "default"
    assert shown["Created"] == "2026-01-01 00:00:00"
    assert shown["Wakes"] == "2026-01-01 01:00:00"
    assert shown["Tags"] == "vip"
    assert shown["Input"] == '{"n": 1}'
    assert "Output" not in shown and "Error" not in shown and "Parent" not in shown
    lines = out.splitlines()
    assert lines[lines.index("Values:") + 1].split() == ["NAME", "VALUE"]
    assert lines[lines.index("Values:") + 2].split() == ["stage", '"reserved"']
    assert lines[lines.index("Attributes:") + 2].split() == ["amount", "1200"]
    assert "Journal:" not in out
    # The values line up after the longest name.
    column = lines[0].index("order-1")
    assert all(
        line[column - 1] == " "
        for line in lines
        if not line.startswith(" ") and ":" in line and not line.endswith(":")
    )


def test_show_lists_what_an_instance_waits_for(instances):
    lines = run("show", "signup-1")[1].splitlines()
    waits = lines.index("Waits:")
    assert lines[waits + 1].split() == ["SIGNAL", "KEY"]
    assert lines[waits + 2].split() == ["confirmed", "u1"]


def test_show_gives_a_failed_instances_error_and_its_cause(instances):
    out = run("show", "pay-1")[1]
    assert fields(out)["Error"] == (
        'StepFailedError: Step "charge" failed after 1 attempt: card declined'
    )
    assert '  cause: {"name": "ValueError", "message": "card declined"' in out


def test_journal_lists_the_entries_without_their_results(instances):
    status, out, err = run("show", "order-1", "--journal")
    lines = out.splitlines()
    journal = lines.index("Journal:")
    assert lines[journal + 1].split() == ["NAME", "KIND", "STATUS", "ATTEMPT", "STARTED", "TOOK"]
    rows = [line.split() for line in lines[journal + 2 :]]
    assert rows[0] == ["reserve", "step", "completed", "1", "2026-01-01", "00:00:00", "0s"]
    assert rows[-1][:3] == ["cool-off", "sleep", "pending"]
    assert "reservation-77" not in out  # the step's result: only in --json


def test_json_show_is_get_status_with_the_journal_results_and_iso_times(instances):
    status, out, err = run("show", "order-1", "--journal", "--json")
    assert (status, err) == (0, "")
    document = json.loads(out)
    assert document["id"] == "order-1" and document["status"] == "suspended"
    reserve = next(e for e in document["journal"] if e["name"] == "reserve")
    assert reserve["kind"] == "step" and reserve["status"] == "completed"
    assert reserve["result"] == "reservation-77"
    assert reserve["attempt"] == 1
    assert reserve["started_at"] == "2026-01-01T00:00:00+00:00"
    assert document["children"] is None
    plain = json.loads(run("show", "order-1", "--json")[1])
    assert plain["journal"] is None


def test_children_lists_the_instances_it_started(define, workflow_clock):
    def parent(ctx, input):
        ctx.start_child("cli-kid", None, id="kid-1").result()

    define("cli-parent")(parent)
    define("cli-kid")(lambda ctx, input: ctx.sleep("nap", "1h"))
    wf.start("cli-parent", None, id="parent-1")
    wf.drain()
    lines = run("show", "parent-1", "--children")[1].splitlines()
    children = lines.index("Children:")
    assert lines[children + 2].split() == ["kid-1", "cli-kid@1", "suspended"]
    document = json.loads(run("show", "parent-1", "--children", "--json")[1])
    assert [child["id"] for child in document["children"]] == ["kid-1"]
    assert fields(run("show", "kid-1")[1])["Parent"] == "parent-1"


def test_an_unknown_id_is_a_command_error(instances):
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="No workflow instance has the id 'nope'"):
        run("show", "nope")
