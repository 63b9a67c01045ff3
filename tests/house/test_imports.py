"""The house rules, read from django_workflows' source (nothing of it is imported, so no database
is needed): no import circle, each layer imports only what it may, the database vendors named only
in the store's backends, and no module over 500 lines. docs/discussions/architecture.md explains
the rooms and the rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.house.imports import (
    circles,
    forbidden_imports,
    import_graph,
    oversized,
    read_package,
    vendor_tests,
)

PACKAGE = Path(__file__).resolve().parents[2] / "django_workflows"

# Layer (a module, or a package with everything in it) -> what its modules may not import.
# docs/discussions/architecture.md says why; change the two together.
MAY_NOT_IMPORT = {
    # The engine runs one execution of one instance; the client, the worker, the schedules and
    # the operations call it, never the other way.
    "django_workflows.engine": (
        "django_workflows.client",
        "django_workflows.published",
        "django_workflows.operations",
        "django_workflows.worker",
        "django_workflows.schedules",
        "django_workflows.triggers",
        "django_workflows.tasks",
        "django_workflows.admin",
        "django_workflows.management",
    ),
    # The store writes workflow state and knows nothing of workflow code or of its callers.
    "django_workflows.store": (
        "django_workflows.engine",
        "django_workflows.registry",
        "django_workflows.instances",
        "django_workflows.client",
        "django_workflows.published",
        "django_workflows.operations",
        "django_workflows.worker",
        "django_workflows.schedules",
        "django_workflows.triggers",
        "django_workflows.tasks",
        "django_workflows.admin",
        "django_workflows.management",
    ),
}
VENDORS_LIVE_IN = "django_workflows/store/backends/"
MAX_LINES = 500


def test_no_module_imports_another_that_imports_it_back():
    graph = import_graph(read_package(PACKAGE))
    found = circles(graph)
    if found:
        pytest.fail(
            "Import circles (imports inside functions count; move what both sides need below "
            "both):\n" + "\n".join(str(circle) for circle in found),
            pytrace=False,
        )


def test_each_layer_imports_only_what_it_may():
    graph = import_graph(read_package(PACKAGE))
    found = forbidden_imports(graph, MAY_NOT_IMPORT)
    if found:
        pytest.fail(
            "Imports the house rules forbid (MAY_NOT_IMPORT):\n"
            + "\n".join(f"  {edge}" for edge in found),
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


def test_no_module_is_over_500_lines():
    found = oversized(read_package(PACKAGE), MAX_LINES)
    if found:
        pytest.fail(
            f"Modules over {MAX_LINES} lines (split them by job):\n"
            + "\n".join(f"  {line}" for line in found),
            pytrace=False,
        )
