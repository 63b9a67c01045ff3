import base64

import pytest

from django_workflows.codecs import AesGcmPayloadCodec

KEY = base64.b64encode(b"S" * 32).decode()


@pytest.fixture
def no_codec(settings):
    """Without a codec, whatever the suite's CODEC=1 says: the raw rows are read as text."""
    settings.DJANGO_WORKFLOWS = {}


@pytest.fixture
def with_codec(settings):
    settings.DJANGO_WORKFLOWS = {"CODEC": AesGcmPayloadCodec(keys={"steplogs": KEY})}


@pytest.fixture
def failing(define):
    """`failing` fails its one step on every attempt (two of them, no delay) in
    `raise_from_deep`, after logging a line through step.log."""

    @define("steplogs-failing")
    def run(ctx, input):
        from django_workflows import Retry

        return ctx.step("charge", charge, retry=Retry(attempts=2, delay="0s"))

    return run


def raise_from_deep(amount):
    raise ValueError(f"card declined for {amount}")


def charge(step):
    step.log.info("charging %s", 42)
    raise_from_deep(42)
