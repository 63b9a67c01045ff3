"""manage.py exportworkflow and django_workflows.testing.replay(): one journal, exported, replayed
in a unit test against the registered code or against another definition."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

import django_workflows as wf
from django_workflows.codecs import AesGcmPayloadCodec
from django_workflows.models import WorkflowInstance
from django_workflows.testing import replay

from .conftest import effect, order_v1, ran, rows

ROOT = Path(__file__).resolve().parents[2]
KEY = "dGVzdHMtb25seS1rZXktMzItYnl0ZXMtbG9uZy4uLi4="


def export(id: str) -> dict:
    out = io.StringIO()
    call_command("exportworkflow", id, stdout=out)
    return json.loads(out.getvalue())


def renamed(ctx, input):
    ctx.step("reserve", effect("reserve"))
    ctx.step("bill", effect("bill"))
    ctx.sleep("cool-off", "1h")


@pytest.mark.django_db
def test_the_export_holds_the_instance_and_its_journal_in_order(parked):
    document = export("order-1")
    assert document["format"] == "django-workflows-export"
    assert document["format_version"] == 1
    assert (document["id"], document["workflow"], document["version"]) == ("order-1", "order", 1)
    assert (document["status"], document["generation"], document["input"]) == (
        "suspended",
        0,
        {"n": 1},
    )
    assert document["output"] is None and document["error"] is None
    assert [e["name"] for e in document["journal"]] == ["reserve", "charge", "cool-off"]
    assert document["journal"][0]["document"]["result"] == "reserve-done"
    assert document["journal"][2]["document"]["kind"] == "sleep"


@pytest.mark.django_db
def test_output_writes_the_export_to_a_file(parked, tmp_path):
    target = tmp_path / "order-1.json"
    out = io.StringIO()
    call_command("exportworkflow", "order-1", "--output", str(target), stdout=out)
    assert out.getvalue().strip() == f"Wrote instance 'order-1' to {target}."
    assert json.loads(target.read_text()) == export("order-1")


@pytest.mark.django_db
def test_an_unknown_id_is_a_command_error(parked):
    with pytest.raises(CommandError, match="No workflow instance 'nope'"):
        call_command("exportworkflow", "nope", stdout=io.StringIO())


@pytest.mark.django_db
def test_the_round_trip_passes_on_the_same_code_and_raises_on_a_renamed_step(
    parked, deploy, tmp_path
):
    target = tmp_path / "order-1.json"
    call_command("exportworkflow", "order-1", "--output", str(target), stdout=io.StringIO())
    before = rows()
    assert replay(target) is None
    deploy("order", renamed)
    with pytest.raises(wf.WorkflowNonDeterminismError, match='"charge", "cool-off" were recorded'):
        replay(target)
    assert rows() == before
    assert not ran


@pytest.mark.django_db
def test_replay_takes_the_dict_its_json_text_or_an_instance_id(parked, deploy):
    document = export("order-2")
    text = json.dumps(document)
    for given in (document, text, "  " + text, "order-2"):
        assert replay(given) is None
    deploy("order", renamed)
    for given in (document, text, "order-2"):
        with pytest.raises(wf.WorkflowNonDeterminismError):
            replay(given)


@pytest.mark.django_db
def test_replay_against_a_new_versions_code(parked, define):
    document = export("order-1")

    def v2_compatible(ctx, input):
        order_v1(ctx, input)
        ctx.step("survey", effect("survey"))

    v2 = define("order", version=2)(v2_compatible)
    assert replay(document, workflow=v2) is None
    assert replay(document, workflow="order") is None  # by name: its highest version, v2

    def v3_breaking(ctx, input):
        ctx.step("reserve", effect("reserve"))
        ctx.step("pay", effect("pay"))

    v3 = define("order", version=3)(v3_breaking)
    with pytest.raises(wf.WorkflowNonDeterminismError, match='before the new step "pay"'):
        replay(document, workflow=v3)
    with pytest.raises(wf.WorkflowNonDeterminismError):
        replay(document, workflow="order")
    assert replay(document) is None  # its own version, 1, is still the old code
    assert not ran


@pytest.mark.django_db
def test_bad_input_is_refused_clearly(parked):
    document = export("order-1")
    with pytest.raises(TypeError, match="replay\\(\\) takes an export"):
        replay(42)
    with pytest.raises(ValueError, match="not valid JSON"):
        replay("{not json")
    with pytest.raises(ValueError, match="Not an export of manage.py exportworkflow"):
        replay({"id": "order-1"})
    with pytest.raises(ValueError, match="format_version"):
        replay({**document, "format_version": 99})
    with pytest.raises(ValueError, match="'journal' must be a list"):
        replay({**document, "journal": None})
    with pytest.raises(ValueError, match="journal entry 0"):
        replay({**document, "journal": ["reserve"]})
    with pytest.raises(ValueError, match="'deadline' must be an ISO 8601 time"):
        replay({**document, "deadline": "tomorrow"})
    with pytest.raises(TypeError, match="workflow must be a @workflow definition"):
        replay(document, workflow=3)
    with pytest.raises(wf.WorkflowNotFoundError, match="No workflow instance 'no-such-id'"):
        replay("no-such-id")
    with pytest.raises(wf.WorkflowNotFoundError, match="not registered"):
        replay({**document, "version": 7})
    with pytest.raises(wf.WorkflowNotFoundError):
        replay(document, workflow="no-such-workflow")


@pytest.mark.django_db
def test_with_a_codec_the_export_holds_the_payloads_in_clear(define, settings, workflow_clock):
    if not getattr(settings, "DJANGO_WORKFLOWS", {}).get("CODEC"):
        settings.DJANGO_WORKFLOWS = {
            **getattr(settings, "DJANGO_WORKFLOWS", {}),
            "CODEC": AesGcmPayloadCodec(keys={"tests": KEY}),
        }
    define("order")(order_v1)
    wf.start("order", {"card": "4242 4242 4242 4242"}, id="secret")
    wf.drain()
    stored = WorkflowInstance.objects.get(pk="secret")
    assert "4242 4242" not in json.dumps(stored.input)  # encrypted in the database
    document = export("secret")
    assert document["input"] == {"card": "4242 4242 4242 4242"}  # in clear in the export
    assert document["journal"][0]["document"]["result"] == "reserve-done"
    assert replay(document) is None
    call = io.StringIO()
    call_command("checkworkflows", "--replay", stdout=call)
    assert call.getvalue().strip() == "Replayed 1 instance(s): all match this code."


@pytest.mark.django_db
def test_a_gather_a_child_and_journaled_values_replay_without_running_anything(
    define, workflow_clock
):
    def child(ctx, input):
        ctx.sleep("nap", "1d")

    def parent(ctx, input):
        ctx.now()
        ctx.set_value("stage", "started")
        ctx.gather(
            lambda: ctx.step("left", effect("left")),
            lambda: ctx.step("right", effect("right")),
        )
        handle = ctx.start_child("nap-child", None)
        ctx.set_status({"waiting": handle.id})
        return handle.result()

    define("nap-child")(child)
    define("parent")(parent)
    wf.start("parent", None, id="p")
    wf.drain()
    assert wf.get_status("p").status == "suspended"
    ran.clear()
    before = rows()
    assert replay("p") is None
    assert rows() == before
    assert not ran

    def swapped_branches(ctx, input):
        ctx.now()
        ctx.set_value("stage", "started")
        ctx.gather(
            lambda: ctx.step("right", effect("right")),
            lambda: ctx.step("left", effect("left")),
        )
        return ctx.start_child("nap-child", None).result()

    with pytest.raises(wf.WorkflowNonDeterminismError, match='"right" was journaled at position'):
        replay("p", workflow=define("parent", version=2)(swapped_branches))

    def a_value_renamed(ctx, input):
        ctx.now()
        ctx.set_value("phase", "started")

    with pytest.raises(wf.WorkflowNonDeterminismError, match='was "stage" and is now "phase"'):
        replay("p", workflow=define("parent", version=3)(a_value_renamed))


def test_the_testing_module_imports_without_django_set_up():
    environment = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    finished = subprocess.run(
        [sys.executable, "-c", "import django_workflows.testing as t; print(t.replay.__name__)"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (finished.returncode, finished.stdout.strip()) == (0, "replay"), finished.stderr


def test_an_export_replays_without_the_database(define):
    # No django_db mark: any query would fail the test.
    def statusful(ctx, input):
        ctx.set_status({"stage": "reserving"})
        ctx.step("reserve", effect("reserve"))
        ctx.set_value("stage", input["stage"])
        ctx.sleep("cool-off", "1h")

    defined = define("statusful")(statusful)
    document = {
        "format": "django-workflows-export",
        "format_version": 1,
        "id": "handmade",
        "workflow": "statusful",
        "version": 1,
        "input": {"stage": "reserved"},
        "created_at": "2026-01-01T00:00:00+00:00",
        "journal": [
            {
                "name": "reserve",
                "document": {"kind": "step", "status": "completed", "result": 1, "pos": [0]},
            },
            {
                "name": "$value:1",
                "document": {
                    "kind": "value",
                    "status": "completed",
                    "name": "stage",
                    "result": "reserved",
                    "pos": [1],
                },
            },
            {
                "name": "cool-off",
                "document": {
                    "kind": "sleep",
                    "status": "pending",
                    "wake_at": "2026-01-01T01:00:00+00:00",
                    "pos": [2],
                },
            },
        ],
    }
    assert replay(document, workflow=defined) is None
    document["journal"][0]["name"] = "reserve-stock"
    with pytest.raises(wf.WorkflowNonDeterminismError, match='"reserve-stock"'):
        replay(document)
    assert not ran
