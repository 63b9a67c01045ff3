"""The house rules, read from django_workflows' source (nothing of it is imported, so no database
is needed): no import circle, every import pointing down the layers, no private member of the
engine or the store used outside its module, the database vendors named only in the store's
backends, at most 20 modules at the package's root and none over 800 lines.
docs/discussions/architecture.md explains the rooms and the rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.house.imports import (
    circles,
    import_graph,
    oversized,
    private_members,
    read_package,
    unplaced,
    upward_imports,
    vendor_tests,
)

PACKAGE = Path(__file__).resolve().parents[2] / "django_workflows"

# The layers, from the ground up: a module imports only from its own layer and those below.
# A module named on its own sits in its layer whatever its package's. docs/discussions/
# architecture.md says what each layer is; change the two together.
LAYERS = [
    # Ground values: errors, settings, durations, JSON and payload checks, what workflow code
    # declares (with the schedule timings it names) and the workflow_event signal.
    [
        "django_workflows.errors",
        "django_workflows.durations",
        "django_workflows.conf",
        "django_workflows.clock",
        "django_workflows.jsonvalues",
        "django_workflows.codecs",
        "django_workflows.attributes",
        "django_workflows.subjects",
        "django_workflows.events",
        "django_workflows.schedules.ids",
        "django_workflows.schedules.cron",
        "django_workflows.schedules.rrule",
        "django_workflows.schedules.timing",
        "django_workflows.definitions",
    ],
    # The tables, and what is read from their rows: the frozen values the client returns and
    # the step middleware's invocations.
    [
        "django_workflows.store.backends.collations",
        "django_workflows.store.backends.mysql.collations",
        "django_workflows.indexes",
        "django_workflows.models",
        "django_workflows.results",
        "django_workflows.middleware",
    ],
    # The store: every read and write of workflow state, one database's way in its backend.
    ["django_workflows.store"],
    # The engine: one execution of one instance, and what starting one takes.
    ["django_workflows.engine"],
    # The client: what application code calls.
    ["django_workflows.client"],
    # The schedules, which start instances through the client.
    ["django_workflows.schedules"],
    # The worker's metrics: its counters, and the server of --metrics-port.
    ["django_workflows.metrics.counters", "django_workflows.metrics.server"],
    # The worker process, which runs the engine and the schedules.
    ["django_workflows.worker"],
    # The integrations: signal triggers, the Django Tasks backend, OpenTelemetry, the
    # database's gauges of the metrics.
    [
        "django_workflows.triggers",
        "django_workflows.tasks",
        "django_workflows.contrib",
        "django_workflows.metrics",
    ],
    # The faces: the admin, the command line, Django's own places, the package's names.
    [
        "django_workflows.admin",
        "django_workflows.cli",
        "django_workflows.management",
        "django_workflows.views",
        "django_workflows.streams",
        "django_workflows.urls",
        "django_workflows.checks",
        "django_workflows.testing",
        "django_workflows.apps",
        "django_workflows",
    ],
]
# The private members of Django's own objects that the store relies on.
DJANGO_PRIVATE = ["_meta", "_state", "_raw_delete"]
PRIVATE_STAYS_IN = ["django_workflows.engine", "django_workflows.store"]
VENDORS_LIVE_IN = "django_workflows/store/backends/"
MAX_LINES = 800
MAX_ROOT_MODULES = 20


def test_no_module_imports_another_that_imports_it_back():
    graph = import_graph(read_package(PACKAGE))
    found = circles(graph)
    if found:
        pytest.fail(
            "Import circles (imports inside functions and under TYPE_CHECKING count; move what "
            "both sides need below both):\n" + "\n".join(str(circle) for circle in found),
            pytrace=False,
        )


def test_every_module_sits_in_a_layer():
    found = unplaced(read_package(PACKAGE), LAYERS)
    if found:
        pytest.fail(
            "Modules that no layer of LAYERS holds (add them where they belong):\n"
            + "\n".join(f"  {name}" for name in found),
            pytrace=False,
        )


def test_every_import_points_down_the_layers():
    graph = import_graph(read_package(PACKAGE))
    found = upward_imports(graph, LAYERS)
    if found:
        pytest.fail(
            "Imports from a lower layer of a higher one (LAYERS; move what both need down):\n"
            + "\n".join(f"  {edge}" for edge in found),
            pytrace=False,
        )


def test_no_private_member_of_the_engine_or_the_store_leaves_its_module():
    found = private_members(read_package(PACKAGE), PRIVATE_STAYS_IN, DJANGO_PRIVATE)
    if found:
        pytest.fail(
            "Private members used outside the module that defines them (make them part of "
            "the module's public surface, or keep the use inside it):\n"
            + "\n".join(f"  {line}" for line in found),
            pytrace=False,
        )


def test_only_the_store_backends_test_the_database_vendor():
    found = vendor_tests(read_package(PACKAGE), VENDORS_LIVE_IN)
    if found:
        pytest.fail(
            f"Vendor tests outside {VENDORS_LIVE_IN} (give the backend a method or a capability "
            f"flag instead):\n" + "\n".join(f"  {line}" for line in found),
            pytrace=False,
        )


def test_no_module_is_over_800_lines():
    found = oversized(read_package(PACKAGE), MAX_LINES)
    if found:
        pytest.fail(
            f"Modules over {MAX_LINES} lines (a module is one concept: find the second one in "
            "it; never split one class across files):\n" + "\n".join(f"  {line}" for line in found),
            pytrace=False,
        )


def test_the_package_root_holds_at_most_20_modules():
    root = sorted(path.name for path in PACKAGE.glob("*.py") if path.name != "__init__.py")
    assert len(root) <= MAX_ROOT_MODULES, (
        f"{len(root)} modules at the package root: {', '.join(root)}; move those of one role "
        "into its package"
    )
