from __future__ import annotations

import contextlib
import os
import sqlite3

import pytest


def pytest_report_header(config):
    """Says which database, Django and Python the run uses, so that CI output shows it."""
    import platform

    import django
    from django.db import connection

    if connection.vendor == "sqlite":
        version = f"SQLite {sqlite3.sqlite_version}"
        where = connection.settings_dict["NAME"]
    else:
        where = f"{connection.settings_dict['HOST']}:{connection.settings_dict['PORT']}"
        try:
            # The server's version, read before pytest-django creates the test database.
            with _database_unblocked(config), connection._nodb_cursor() as cursor:
                cursor.execute("SELECT version()")
                version = cursor.fetchone()[0]
        except Exception as error:  # the tests fail on this themselves; the header only says it
            version = f"unreachable ({error.__class__.__name__}: {error})".splitlines()[0]
    codec = ", every payload encrypted (CODEC=1)" if os.environ.get("CODEC") else ""
    isolation = connection.settings_dict.get("OPTIONS", {}).get("isolation_level")
    isolation = f", {isolation.upper()}" if isolation else ""
    options = connection.settings_dict.get("OPTIONS", {})
    prepared = (
        ", server-side binding, prepared statements (DB_PREPARED=1)"
        if options.get("server_side_binding") and options.get("prepare_threshold") is not None
        else ""
    )
    return (
        f"database: DB={os.environ.get('DB', 'sqlite')} ({connection.vendor}) {version}, "
        f"{where}{isolation}{prepared}{codec}; Django {django.get_version()}, "
        f"Python {platform.python_version()}"
    )


def _database_unblocked(config):
    try:
        from pytest_django.plugin import blocking_manager_key
    except ImportError:
        return contextlib.nullcontext()
    return config.stash[blocking_manager_key].unblock()


@pytest.fixture
def world():
    """The outside world's stand-ins (payments, stock, mail), fresh for each test."""
    from tests.testapp.world import world as the_world

    the_world.reset()
    return the_world


@pytest.fixture
def events():
    """Every WorkflowEvent sent during the test, in order."""
    from django_workflows.events import workflow_event

    received = []

    def receiver(sender, event, **kwargs):
        received.append(event)

    workflow_event.connect(receiver, weak=False)
    yield received
    workflow_event.disconnect(receiver)


@pytest.fixture
def define():
    """`define(name, **options)` decorates a workflow for this test only: unregistered after."""
    from django_workflows import workflow
    from django_workflows.engine.registry import registry

    defined = []

    def register(*args, **kwargs):
        def decorate(fn):
            definition = workflow(*args, **kwargs)(fn)
            defined.append(definition)
            return definition

        return decorate

    yield register
    for definition in defined:
        registry.unregister(definition)


@pytest.fixture(autouse=True)
def _lapsed_leases_looked_for_afresh():
    """Each test's claims look for the keys of lapsed leases (store/parking.py looks at most
    once a second of the workflow clock per process): a manual clock of another test at the
    same instant must not have them skip it."""
    from django_workflows.store import parking

    parking._lapsed_looked.clear()
    yield
