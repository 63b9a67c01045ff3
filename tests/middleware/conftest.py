from __future__ import annotations

import pytest

from tests.middleware import handlers


@pytest.fixture
def step_middleware(settings):
    """`step_middleware(*names)` puts these handlers of tests/middleware/handlers.py in
    STEP_MIDDLEWARE (with the rest of the setting as it is), outermost first."""
    handlers.seen.clear()

    def use(*names: str) -> None:
        settings.DJANGO_WORKFLOWS = {
            **(getattr(settings, "DJANGO_WORKFLOWS", None) or {}),
            "STEP_MIDDLEWARE": [f"tests.middleware.handlers.{name}" for name in names],
        }

    return use
