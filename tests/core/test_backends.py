"""The store's backend of each database alias: chosen by the connection's vendor, once."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import override_settings

from django_workflows.store.backends import CLASSES, backend
from django_workflows.store.backends.base import Backend


def test_the_backend_of_an_alias_is_the_class_of_its_vendor():
    chosen = backend(connection.alias)
    assert f"{type(chosen).__module__}.{type(chosen).__qualname__}" == CLASSES[connection.vendor]
    assert chosen.alias == connection.alias


def test_the_backend_of_an_alias_is_made_once():
    assert backend(connection.alias) is backend(connection.alias)


def test_a_change_of_databases_chooses_the_backends_again(settings):
    before = backend(connection.alias)
    with pytest.warns(UserWarning, match="DATABASES"):
        with override_settings(DATABASES=settings.DATABASES):
            during = backend(connection.alias)
    assert during is not before
    assert backend(connection.alias) is not during


def test_a_vendor_without_a_backend_of_its_own_gets_the_generic_one(monkeypatch, settings):
    monkeypatch.delitem(CLASSES, connection.vendor)
    with pytest.warns(UserWarning, match="DATABASES"):
        with override_settings(DATABASES=settings.DATABASES):
            chosen = backend(connection.alias)
    assert type(chosen) is Backend
    assert not chosen.has_advisory_locks and not chosen.has_listen_notify
    assert chosen.transaction_isolation() is None and chosen.max_allowed_packet() is None
