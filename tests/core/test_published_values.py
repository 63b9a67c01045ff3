"""Published values: ctx.set_value() and django_workflows.get_value(), InstanceStatus.values
and the value-set event, as docs/reference/api.md describes them."""

from __future__ import annotations

import base64

import pytest

import django_workflows as wf
from django_workflows.codecs import AesGcmPayloadCodec
from django_workflows.models import JournalEntry
from django_workflows.store.published import PREFIX

pytestmark = pytest.mark.django_db


@pytest.fixture
def progress(define, world):
    """Publishes `stage` before and after its step, `total` once, then waits for a signal
    `go` (key: the instance id) and publishes `stage` once more."""

    @define("publishes-progress")
    def run(ctx, input):
        ctx.set_value("stage", "reserving")
        ctx.set_value("total", {"amount": input["amount"], "currency": "EUR"})
        ctx.step("reserve", lambda step: world.calls.append("reserve") or "r1")
        ctx.set_value("stage", "waiting")
        ctx.wait_for_signal("go", "go", key=ctx.instance_id)
        ctx.set_value("stage", "done")
        return "ok"

    return run


def test_a_value_is_readable_while_the_instance_waits_and_after_it_ends(progress, world):
    wf.start("publishes-progress", {"amount": 12}, id="p1")
    wf.drain()
    assert wf.get_status("p1").status == "suspended", wf.get_status("p1").error
    assert wf.get_value("p1", "stage") == "waiting"  # the latest of two
    assert wf.get_value("p1", "total") == {"amount": 12, "currency": "EUR"}
    wf.signal("go", key="p1")
    wf.drain()
    assert wf.get_status("p1").status == "completed"
    assert wf.get_value("p1", "stage") == "done"
    assert wf.get_value("p1", "total", timeout="1s") == {"amount": 12, "currency": "EUR"}


def test_instance_status_values_holds_each_names_latest_value(progress):
    wf.start("publishes-progress", {"amount": 5}, id="p2")
    wf.start("publishes-progress", {"amount": 6}, id="p3")
    wf.drain()
    expected = {"stage": "waiting", "total": {"amount": 5, "currency": "EUR"}}
    assert wf.get_status("p2").values == expected
    assert wf.cancel("p2").instance.values == expected
    listed = {s.id: s.values for s in wf.list_instances(workflow="publishes-progress")}
    assert listed["p2"] == expected
    assert listed["p3"]["total"]["amount"] == 6


def test_an_instance_that_published_nothing_has_no_values(define):
    @define("publishes-nothing")
    def run(ctx, input):
        return 1

    wf.start("publishes-nothing", id="quiet")
    assert wf.get_status("quiet").values == {}
    wf.drain()
    assert wf.get_status("quiet").values == {}
    assert wf.list_instances(workflow="publishes-nothing")[0].values == {}


def test_get_value_raises_key_error_for_a_value_not_published(progress):
    wf.start("publishes-progress", {"amount": 1}, id="p4")
    with pytest.raises(KeyError):
        wf.get_value("p4", "stage")  # not run yet
    wf.drain()
    with pytest.raises(KeyError):
        wf.get_value("p4", "never")


def test_get_value_with_a_timeout_raises_workflow_result_timeout_error_past_it(progress):
    wf.start("publishes-progress", {"amount": 1}, id="p5")
    wf.drain()
    with pytest.raises(wf.WorkflowResultTimeoutError) as raised:
        wf.get_value("p5", "never", timeout="0.1s")
    assert raised.value.instance_id == "p5"
    assert raised.value.timeout == pytest.approx(0.1)


def test_get_value_with_a_timeout_of_an_ended_instance_raises_key_error_at_once(define):
    @define("ends-silent")
    def run(ctx, input):
        ctx.set_value("a", 1)

    wf.start("ends-silent", id="silent")
    wf.drain()
    with pytest.raises(KeyError):
        wf.get_value("silent", "b", timeout="30s")  # it never will: no 30 s wait
    assert wf.get_value("silent", "a", timeout="30s") == 1


def test_get_value_of_an_unknown_instance_raises_workflow_not_found_error():
    with pytest.raises(wf.WorkflowNotFoundError):
        wf.get_value("nobody", "stage")
    with pytest.raises(wf.WorkflowNotFoundError):
        wf.get_value("nobody", "stage", timeout="0.1s")


@pytest.mark.parametrize("name", [None, "", 3, b"stage"])
def test_get_value_refuses_a_name_that_is_not_a_non_empty_string(progress, name):
    wf.start("publishes-progress", {"amount": 1}, id="p6")
    with pytest.raises(TypeError, match="name"):
        wf.get_value("p6", name)


def test_get_value_refuses_a_bad_timeout(progress):
    wf.start("publishes-progress", {"amount": 1}, id="p7")
    with pytest.raises(ValueError, match="timeout"):
        wf.get_value("p7", "stage", timeout="soon")


def test_a_replay_returns_without_writing_the_value_again(define, world, workflow_clock, events):
    @define("replays-values")
    def run(ctx, input):
        ctx.set_value("stage", 1)
        ctx.step("one", lambda step: world.calls.append("one"))
        ctx.set_value("stage", 2)
        ctx.sleep("nap", "1h")
        ctx.set_value("stage", 3)
        return "done"

    wf.start("replays-values", id="r1")
    wf.drain()
    rows = JournalEntry.objects.filter(instance_id="r1", name__startswith=PREFIX)
    before = {row.name: (row.id, row.document) for row in rows}
    assert len(before) == 2
    assert wf.get_value("r1", "stage") == 2
    workflow_clock.advance("1h")
    wf.drain()
    assert wf.result("r1") == "done"
    after = {row.name: (row.id, row.document) for row in rows.all()}
    assert len(after) == 3
    assert {name: after[name] for name in before} == before  # the replayed two: untouched
    assert wf.get_value("r1", "stage") == 3
    assert world.calls == ["one"]
    assert [e.data for e in events if e.type == "value-set"] == [
        {"name": "stage", "value": 1},
        {"name": "stage", "value": 2},
        {"name": "stage", "value": 3},
    ]
    assert all(e.id == "r1" and e.workflow == "replays-values" for e in events)


def test_a_value_is_written_at_once_with_what_was_buffered_before_it(define, world):
    """A reader in another process sees the value while the workflow goes on, and sees the
    step that came before it completed."""
    seen = []

    @define("writes-at-once")
    def run(ctx, input):
        ctx.step("before", lambda step: "b")
        ctx.set_value("stage", "after-before")
        # The step runs after the value's write: the value and the step's entry are stored.
        ctx.step("look", lambda step: seen.append(stored("w1")))

    def stored(id):
        return {
            row.name: row.document.get("status")
            for row in JournalEntry.objects.filter(instance_id=id)
        }

    wf.start("writes-at-once", id="w1")
    wf.drain()
    [journal] = seen
    assert journal["before"] == "completed"
    assert [name for name in journal if name.startswith(PREFIX)] == [PREFIX + "1"]


def test_the_same_name_set_in_gather_branches_keeps_the_last_written(define):
    @define("gathers-values")
    def run(ctx, input):
        ctx.gather(lambda: ctx.set_value("who", "a"), lambda: ctx.set_value("who", "b"))
        ctx.set_value("who", "last")

    wf.start("gathers-values", id="g1")
    wf.drain()
    assert wf.get_status("g1").status == "completed"
    assert wf.get_value("g1", "who") == "last"
    assert JournalEntry.objects.filter(instance_id="g1", name__startswith=PREFIX).count() == 3


def test_a_changed_name_at_a_recorded_place_is_a_non_determinism_error(define, workflow_clock):
    names = ["before"]

    @define("renames-a-value")
    def run(ctx, input):
        ctx.set_value(names[0], 1)
        ctx.sleep("nap", "1h")

    wf.start("renames-a-value", id="n1")
    wf.drain()
    names[0] = "after"
    workflow_clock.advance("1h")
    wf.drain()
    status = wf.get_status("n1")
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowNonDeterminismError"
    assert '"before"' in status.error["message"] and '"after"' in status.error["message"]


# -- bad input: a clear error in the workflow, nothing stored --------------------------------


@pytest.mark.parametrize(
    ("name", "value", "error", "message"),
    [
        ("stage", object(), "TypeError", "stage"),
        ("stage", {1, 2}, "TypeError", "stage"),
        ("stage", "x" * (64 * 1024), "TypeError", "64 KiB"),
        (None, 1, "TypeError", "name"),
        ("", 1, "TypeError", "name"),
        (7, 1, "TypeError", "name"),
        ("n" * 513, 1, "ValueError", "512"),
        ("bad\ud800", 1, "UnstorableValueError", "value name"),  # a ValueError
    ],
)
def test_bad_input_fails_the_workflow_with_a_clear_error_and_stores_nothing(
    define, name, value, error, message
):
    @define("publishes-badly")
    def run(ctx, input):
        ctx.set_value(name, value)

    wf.start("publishes-badly", id="bad")
    wf.drain()
    status = wf.get_status("bad")
    assert status.status == "failed"
    assert status.error["name"] == error
    assert message in status.error["message"]
    assert status.values == {}
    assert not JournalEntry.objects.filter(instance_id="bad", name__startswith=PREFIX).exists()


def test_a_value_of_just_under_64_kib_is_published(define):
    value = "x" * (64 * 1024 - 2)  # the quotes make 64 KiB of JSON

    @define("publishes-big")
    def run(ctx, input):
        ctx.set_value("big", value)

    wf.start("publishes-big", id="big")
    wf.drain()
    assert wf.get_value("big", "big") == value


def test_set_value_inside_a_step_is_refused(define):
    @define("publishes-from-a-step")
    def run(ctx, input):
        ctx.step("inside", lambda step: ctx.set_value("stage", 1))

    wf.start("publishes-from-a-step", id="inside")
    wf.drain()
    status = wf.get_status("inside")
    assert status.status == "failed"
    assert status.error["name"] == "WorkflowDefinitionError"
    assert "ctx.set_value()" in status.error["message"]
    assert status.values == {}


# -- the codec ---------------------------------------------------------------------------------


def test_a_value_is_stored_encrypted_by_the_codec_and_read_back(define, settings):
    key = base64.b64encode(b"V" * 32).decode()
    settings.DJANGO_WORKFLOWS = {"CODEC": AesGcmPayloadCodec(keys={"2026-12": key})}

    @define("publishes-secrets")
    def run(ctx, input):
        ctx.set_value("card", {"number": "4242 4242 4242 4242"})

    wf.start("publishes-secrets", id="sealed")
    wf.drain()
    [document] = JournalEntry.objects.filter(
        instance_id="sealed", name__startswith=PREFIX
    ).values_list("document", flat=True)
    # With its spaces the number cannot turn up in a timestamp or in the sealed base64.
    assert "4242 4242" not in str(document)
    assert document["name"] == "card"  # plain: the store finds a value by its name
    assert wf.get_value("sealed", "card") == {"number": "4242 4242 4242 4242"}
    assert wf.get_status("sealed").values == {"card": {"number": "4242 4242 4242 4242"}}


@pytest.mark.parametrize(
    "name", ['say "hi"', "back\\slash", "été 😀", "1", "true", "null", "%_", " padded "]
)
def test_any_name_is_found_exactly(define, name):
    @define("publishes-odd-names")
    def run(ctx, input):
        ctx.set_value(name, "mine")
        ctx.set_value(name.strip() + "x", "other")

    wf.start("publishes-odd-names", id="odd")
    wf.drain()
    assert wf.get_value("odd", name) == "mine"
    assert wf.get_status("odd").values[name] == "mine"
    if name.strip() != name:
        with pytest.raises(KeyError):
            wf.get_value("odd", name.strip())
