from __future__ import annotations

import pytest

from tests.testapp.workflows import hang_gates


@pytest.fixture
def gates():
    for gate in hang_gates.values():
        gate.clear()
    yield hang_gates
    hang_gates["release"].set()  # never leave a step hanging
