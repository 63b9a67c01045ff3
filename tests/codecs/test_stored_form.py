"""The stored form tells an encoded payload from the application's data, whatever the data:
a plain string that starts like a ciphertext (`$wf1:...`) is data, with or without a codec."""

from __future__ import annotations

import base64

import pytest

import django_workflows as wf
from django_workflows import codecs
from django_workflows.codecs import AesGcmPayloadCodec
from django_workflows.models import WorkflowInstance
from django_workflows.store import payloads
from django_workflows.worker import Worker

pytestmark = pytest.mark.django_db

KEY_A = base64.b64encode(b"A" * 32).decode()
LOOKALIKE = "$wf1:aes-256-gcm:2026-09.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"


def use_codec(settings):
    settings.DJANGO_WORKFLOWS = {"CODEC": AesGcmPayloadCodec(keys={"2026-09": KEY_A})}


@pytest.fixture
def lookalikes(define):
    """Its input becomes its custom status and, suffixed, a step's result; it returns the
    payload of the signal `lookalike` it waits for (key `k`)."""

    @define("lookalikes")
    def run(ctx, input):
        ctx.set_status(input)
        ctx.step("echo", lambda step: f"{input}-step")
        return ctx.wait_for_signal("await", "lookalike", key="k")

    return run


@pytest.mark.parametrize(
    "value",
    [
        LOOKALIKE,
        "$wf1:",
        "$wf1:b64:e30=",
        "$wf0:",
        "$wf0:$wf1:x",
        "$wf",
        "$wfx",
        "$w",
        "",
        "plain",
        ["$wf1:x"],
        {"a": "$wf1:x"},
        {"name": "StepFailedError", "data": "$wf1:aes-256-gcm:2026-09.AAAA"},
    ],
)
@pytest.mark.parametrize("field", ["input", "error"])
def test_any_plain_value_reads_back_as_it_was_with_or_without_a_codec_later(settings, field, value):
    at = payloads.instance_at("i", field)
    stored = payloads.encode_value(field, value, at)  # no codec
    assert payloads.decode_value(field, stored, at) == value
    use_codec(settings)
    assert payloads.decode_value(field, stored, at) == value
    encoded = payloads.encode_value(field, value, at)
    assert payloads.decode_value(field, encoded, at) == value


def test_a_plain_string_that_looks_encrypted_is_stored_escaped_and_a_ciphertext_is_not():
    stored = codecs.encode(LOOKALIKE, codecs.where("x"))
    assert stored == "$wf0:" + LOOKALIKE and not codecs.is_encoded(stored)
    assert codecs.encode("plain", codecs.where("x")) == "plain"  # everything else as it is


@pytest.mark.parametrize("codec_from", ["never", "later", "start"])
def test_strings_that_look_encrypted_round_trip_in_input_step_status_and_signal(
    settings, workflow_clock, lookalikes, codec_from
):
    if codec_from == "start":
        use_codec(settings)
    wf.start("lookalikes", LOOKALIKE, id="looks")
    wf.drain()
    if codec_from == "later":
        use_codec(settings)
    wf.signal("lookalike", f"{LOOKALIKE}-signal", key="k")
    wf.drain()

    status = wf.get_status("looks", journal=True)
    assert status.status == "completed", status.error
    assert status.input == LOOKALIKE
    assert status.custom_status == LOOKALIKE
    (echo,) = (entry for entry in status.journal if entry.name == "echo")
    assert echo.result == f"{LOOKALIKE}-step"
    assert status.output == f"{LOOKALIKE}-signal"
    assert wf.result("looks", timeout=5) == f"{LOOKALIKE}-signal"


def test_a_signal_that_looks_encrypted_wakes_every_waiter(settings, workflow_clock, lookalikes):
    wf.start("lookalikes", "first", id="first")
    wf.start("lookalikes", "second", id="second")
    wf.drain()
    wf.signal("lookalike", LOOKALIKE, key="k")
    wf.drain()
    for id in ("first", "second"):
        status = wf.get_status(id)
        assert (status.status, status.output) == ("completed", LOOKALIKE), status.error


@pytest.mark.parametrize("with_codec", [False, True])
@pytest.mark.parametrize(
    "stop, error", [("cancel", "WorkflowCancelledError"), ("terminate", "WorkflowTerminatedError")]
)
def test_cancel_and_terminate_take_effect_on_an_instance_whose_strings_look_encrypted(
    settings, workflow_clock, lookalikes, stop, error, with_codec
):
    if with_codec:
        use_codec(settings)
    wf.start("lookalikes", LOOKALIKE, id="stopped")
    wf.drain()
    assert getattr(wf, stop)("stopped", reason=f"{LOOKALIKE}-reason").accepted
    wf.drain()
    status = wf.get_status("stopped")
    assert status.status == "cancelled"
    assert status.error == {"name": error, "message": f"{LOOKALIKE}-reason"}


def test_a_ciphertext_no_codec_can_read_says_which_codec_it_needs(settings, workflow_clock):
    use_codec(settings)
    wf.start("wait-once", {"key": "k"}, id="sealed")
    settings.DJANGO_WORKFLOWS = {}  # the codec removed: its ciphertext is still not data
    assert WorkflowInstance.objects.get(pk="sealed").input.startswith("$wf1:aes-256-gcm:")
    with pytest.raises(wf.WorkflowPayloadError, match="'aes-256-gcm'.*lists none"):
        wf.get_status("sealed")


@pytest.mark.parametrize(
    "stop, error", [("cancel", "WorkflowCancelledError"), ("terminate", "WorkflowTerminatedError")]
)
def test_a_cancel_of_an_instance_a_key_is_missing_for_waits_for_the_key_instead_of_spinning(
    settings, workflow_clock, stop, error
):
    """Left alone for a minute at a time, like any instance the codec cannot read (not claimed
    again at once for ever); the cancel or terminate takes effect once the key is back."""
    key_b = base64.b64encode(b"B" * 32).decode()
    use_codec(settings)
    wf.start("wait-once", {"key": "k"}, id="locked")
    wf.drain()
    settings.DJANGO_WORKFLOWS = {"CODEC": AesGcmPayloadCodec(keys={"other": key_b})}
    assert getattr(wf, stop)("locked", reason="stop it").accepted
    # One round of a worker's loop (wf.drain() would never return if it spun)
    worker = Worker()
    instances, claim, token = worker._claim(1)
    assert [instance.id for instance in instances] == ["locked"]
    assert worker._execute(instances[0], claim, token) == "unreadable"
    assert worker._claim(1)[0] == []  # handed back for a minute, not due again at once
    row = WorkflowInstance.objects.get(pk="locked")
    assert (row.status, row.lease_token, row.cancel_requested) == ("suspended", None, True)

    settings.DJANGO_WORKFLOWS = {
        "CODEC": AesGcmPayloadCodec(keys={"other": key_b, "2026-09": KEY_A}, current="other")
    }
    workflow_clock.advance("1m")
    wf.drain()
    assert wf.get_status("locked").error == {"name": error, "message": "stop it"}
