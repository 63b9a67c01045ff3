from __future__ import annotations

import pytest

from tests.testapp.world import world as the_world


@pytest.fixture
def world():
    the_world.reset()
    return the_world
