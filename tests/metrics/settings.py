"""The test settings with DJANGO_WORKFLOWS["METRICS"] on, for runworkflows processes."""

from tests.settings import *  # noqa: F403

DJANGO_WORKFLOWS = {**globals().get("DJANGO_WORKFLOWS", {}), "METRICS": True}
