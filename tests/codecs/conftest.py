import pytest


@pytest.fixture(autouse=True)
def no_codec_to_begin_with(settings):
    """Each test here sets the codecs it means; under CODEC=1 the suite's own one is dropped."""
    settings.DJANGO_WORKFLOWS = {}
