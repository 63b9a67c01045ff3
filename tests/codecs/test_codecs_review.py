"""Encrypt what workflows store: the rules a review against the docs page found missing or
untested, one test each."""

from __future__ import annotations

import base64
import json

import pytest

import django_workflows as wf
from django_workflows.codecs import AesGcmPayloadCodec
from django_workflows.models import JournalEntry, Signal, WorkflowInstance

pytestmark = pytest.mark.django_db

KEY_A = base64.b64encode(b"A" * 32).decode()
KEY_B = base64.b64encode(b"B" * 32).decode()
SECRET = "4111-1111-1111-1111"


def use_codec(settings, *codecs):
    settings.DJANGO_WORKFLOWS = {"CODEC": list(codecs) if len(codecs) > 1 else codecs[0]}


def aes(keys=None, current="2026-09", **options):
    return AesGcmPayloadCodec(keys=keys or {"2026-09": KEY_A}, current=current, **options)


def everything_stored() -> str:
    """Every instance, journal entry and signal row, as one text."""
    rows = [
        *WorkflowInstance.objects.values(),
        *JournalEntry.objects.values("instance_id", "name", "document"),
        *Signal.objects.values("name", "key", "payload"),
    ]
    return json.dumps(rows, default=str)


def drain_all(clock, times=4):
    for _ in range(times):
        wf.drain()
        clock.advance("1s")


def test_a_childs_end_payloads_and_the_parents_copy_are_encrypted(settings, define, workflow_clock):
    """A child's output and error reach its parent through a signal and the parent's wait:
    both copies are encrypted, and the parent reads them back."""
    use_codec(settings, aes())

    @define("secret-kid")
    def kid(ctx, input):
        if input["fail"]:
            ctx.fail(f"declined {SECRET}-E")
        return {"card": f"{SECRET}-O"}

    @define("secret-parent")
    def parent(ctx, input):
        out = ctx.execute_child("secret-kid", {"fail": False, "in": f"{SECRET}-I"})
        try:
            ctx.execute_child("secret-kid", {"fail": True})
        except wf.ChildWorkflowFailedError as error:
            return {"out": out, "caught": error.cause.get("message")}
        return None

    wf.start("secret-parent", {}, id="sp")
    drain_all(workflow_clock, 8)
    status = wf.get_status("sp")
    assert status.status == "completed", status
    assert status.output == {"out": {"card": f"{SECRET}-O"}, "caught": f"declined {SECRET}-E"}
    assert Signal.objects.filter(name="$child").count() == 2
    assert SECRET not in everything_stored()


def test_the_retry_entry_and_a_terminate_reason_are_encrypted(settings, define, workflow_clock):
    """retry() journals the error it retried ($retry:<n>); a terminate's reason is a cancel
    reason: neither stays readable."""
    use_codec(settings, aes())

    @define("fails-once")
    def fails_once(ctx, input):
        ctx.step("call", lambda step: (_ for _ in ()).throw(RuntimeError(f"{SECRET}-R")), retry=1)

    @define("waits-long")
    def waits_long(ctx, input):
        ctx.sleep("nap", "1d")

    wf.start("fails-once", {}, id="f1")
    wf.start("waits-long", {}, id="w1")
    drain_all(workflow_clock)
    assert wf.get_status("f1").status == "failed"
    wf.retry("f1")
    wf.terminate("w1", reason=f"{SECRET}-T")
    drain_all(workflow_clock)
    status = wf.get_status("f1", journal=True)
    retried = next(e for e in status.journal if e.name == "$retry:1")
    assert f"{SECRET}-R" in json.dumps(retried.result)
    assert f"{SECRET}-T" in wf.get_status("w1").error["message"]
    assert SECRET not in everything_stored()


def test_a_codec_class_of_ones_own_is_created_from_the_setting(settings, workflow_clock):
    """`CODEC` takes a codec's class (created once) as well as a dotted path or an instance."""
    from tests.testapp.codecs import Base64Codec

    use_codec(settings, Base64Codec)
    wf.start("wait-once", {"key": "k"}, id="own")
    assert WorkflowInstance.objects.get(pk="own").input.startswith("$wf1:b64:")
    assert wf.get_status("own").input == {"key": "k"}


def test_list_shows_an_instance_without_any_of_its_payloads_when_one_cannot_be_read(
    settings, workflow_clock
):
    """list_instances() shows an instance a key is missing for "without its payloads": none of
    them, not even those written under a key that is listed; its error keeps its name."""
    use_codec(settings, aes())
    wf.start("wait-once", {"key": "k"}, id="half")
    wf.drain()
    wf.cancel("half", reason="stop")
    use_codec(settings, aes({"2027-03": KEY_B, "2026-09": KEY_A}, current="2027-03"))
    wf.drain()  # cancelled: its error written under 2027-03, its input under 2026-09
    row = WorkflowInstance.objects.get(pk="half")
    assert row.status == "cancelled" and row.error["data"].startswith("$wf1:aes-256-gcm:2027-03.")
    use_codec(settings, aes({"2027-03": KEY_B}, current="2027-03"))
    (listed,) = wf.list_instances(workflow="wait-once")
    assert (listed.id, listed.status) == ("half", "cancelled")
    assert (listed.input, listed.output, listed.custom_status) == (None, None, None)
    assert listed.error == {"name": "WorkflowCancelledError"}
    with pytest.raises(wf.WorkflowPayloadError, match="'2026-09'"):
        wf.get_status("half")


class KmsCodec:
    """A codec of one's own whose key service can be down: its decode() raises what the
    service raised, not a WorkflowPayloadError."""

    id = "kms"
    down = False

    def encode(self, value, where):
        return json.dumps([where, value])

    def decode(self, stored, where):
        if KmsCodec.down:
            raise ConnectionError("the key service is unreachable")
        stored_where, value = json.loads(stored)
        assert stored_where == where
        return value


def test_a_codec_that_fails_to_decode_leaves_the_instance_alone_like_a_missing_key(
    settings, workflow_clock
):
    """Whatever a codec's decode() raises, the payload cannot be read: get_status() raises
    WorkflowPayloadError naming the codec, list shows the instance without payloads, and
    workers leave it alone until the codec reads again."""
    use_codec(settings, KmsCodec())
    wf.start("wait-once", {"key": "k"}, id="kms-1")
    wf.drain()
    wf.signal("ping", {"n": 1}, key="k")
    KmsCodec.down = True
    try:
        with pytest.raises(wf.WorkflowPayloadError, match="'kms'"):
            wf.get_status("kms-1")
        (listed,) = wf.list_instances(workflow="wait-once")
        assert listed.input is None and listed.status == "suspended"
        wf.drain()
        row = WorkflowInstance.objects.get(pk="kms-1")
        assert (row.status, row.runs, row.lease_token) == ("suspended", 1, None)
    finally:
        KmsCodec.down = False
    workflow_clock.advance("1m")
    wf.drain()
    assert wf.get_status("kms-1").output == {"n": 1}


def test_schedule_inputs_after_a_rotation_declared_resaved_upserted_kept_until_upsert(
    settings, define, workflow_clock
):
    """A declared schedule's input is saved again under the current key every minute; an
    upserted one's only by its next upsert(): pause() and resume() keep it as stored."""
    from django_workflows import Schedule, schedules
    from django_workflows.models import WorkflowSchedule
    from django_workflows.schedules.declared import sync_declared

    use_codec(settings, aes())

    @define("keyed-reminder", schedules=[Schedule("declared-r", every="1d", input={"u": "d"})])
    def remind(ctx, input):
        return input

    sync_declared("default")
    schedules.upsert("upserted-r", workflow="keyed-reminder", every="1d", input={"u": "x"})

    def key_of(id):
        return WorkflowSchedule.objects.get(pk=id).input.split(":")[2].split(".")[0]

    assert (key_of("declared-r"), key_of("upserted-r")) == ("2026-09", "2026-09")
    use_codec(settings, aes({"2027-03": KEY_B, "2026-09": KEY_A}, current="2027-03"))
    schedules.pause("upserted-r")
    schedules.resume("upserted-r")
    workflow_clock.advance("1m")
    sync_declared("default")
    assert (key_of("declared-r"), key_of("upserted-r")) == ("2027-03", "2026-09")
    assert schedules.get("upserted-r").input == {"u": "x"}
    schedules.upsert("upserted-r", workflow="keyed-reminder", every="1d", input={"u": "x"})
    assert key_of("upserted-r") == "2027-03"


def test_compression_starts_at_exactly_1_kib_of_json():
    """1023 bytes of JSON are sealed as they are, 1024 compressed first."""

    def sealed_size(n):
        value = "a" * (n - 2)  # a JSON string: two quotes around it
        assert len(json.dumps(value)) == n
        return len(aes().encode(value, "x"))

    assert sealed_size(1023) > 1023
    assert sealed_size(1024) < 200
