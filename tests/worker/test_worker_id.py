"""A worker's id is written as the lease owner of what it claims: it must fit that column."""

from __future__ import annotations

import pytest

from django_workflows.models import KEY_LENGTH
from django_workflows.worker import Worker

pytestmark = pytest.mark.django_db


def test_a_worker_id_longer_than_the_lease_owner_column_is_refused():
    with pytest.raises(ValueError, match=r"\bid\b.*300.*255"):
        Worker(id="w" * 300)


def test_a_worker_id_that_is_not_a_string_is_refused():
    with pytest.raises(TypeError, match=r"\bid\b"):
        Worker(id=42)  # type: ignore[arg-type]


def test_a_worker_id_as_long_as_the_column_is_taken():
    assert Worker(id="w" * KEY_LENGTH).id == "w" * KEY_LENGTH


def test_the_default_worker_id_fits_the_column():
    assert len(Worker().id) <= KEY_LENGTH
