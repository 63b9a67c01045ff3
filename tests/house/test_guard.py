"""The guard itself: on a small package written to a temporary folder, it reports the circles, the
imports up the layers, the private members, the vendor tests and the long modules planted there,
so that the house tests cannot pass by seeing nothing."""

from __future__ import annotations

import textwrap
from pathlib import Path

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
from tests.house.test_imports import (
    DJANGO_PRIVATE,
    LAYERS,
    MAX_LINES,
    PRIVATE_STAYS_IN,
    VENDORS_LIVE_IN,
)


def package(tmp_path: Path, files: dict[str, str]) -> Path:
    """A package `django_workflows` in `tmp_path` with `files` (path in the package -> source),
    an empty `__init__.py` in each folder; returns the package's folder."""
    root = tmp_path / "django_workflows"
    for name, source in files.items():
        path = root / name
        for folder in [root, *path.relative_to(root).parents]:
            init = root / folder / "__init__.py"
            init.parent.mkdir(parents=True, exist_ok=True)
            init.touch()
        path.write_text(textwrap.dedent(source))
    return root


def edges(graph: dict, source: str) -> set[str]:
    return set(graph[f"django_workflows.{source}"])


def test_an_import_inside_a_function_closes_a_circle(tmp_path):
    root = package(
        tmp_path,
        {
            "a.py": "from .b import helper\n",
            "b.py": """\
                def helper():
                    from . import a

                    return a
            """,
        },
    )
    [circle] = circles(import_graph(read_package(root)))
    assert circle.modules == ["django_workflows.a", "django_workflows.b"]
    assert "django_workflows.a -> django_workflows.b -> django_workflows.a" in str(circle)
    assert "django_workflows.b imports django_workflows.a (line 2)" in str(circle)


def test_a_longer_circle_is_reported_through_every_module_in_it(tmp_path):
    root = package(
        tmp_path,
        {
            "a.py": "import django_workflows.b\n",
            "b.py": "from django_workflows.engine import c\n",
            "engine/c.py": "from ..a import thing\n",
        },
    )
    [circle] = circles(import_graph(read_package(root)))
    assert [edge.target for edge in circle.imports] == [
        "django_workflows.b",
        "django_workflows.engine.c",
        "django_workflows.a",
    ]


def test_an_import_under_type_checking_closes_a_circle_too(tmp_path):
    root = package(
        tmp_path,
        {
            "a.py": "from . import b\n",
            "b.py": """\
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    from .a import Thing
            """,
        },
    )
    graph = import_graph(read_package(root))
    assert edges(graph, "b") == {"django_workflows.a"}
    [circle] = circles(graph)
    assert circle.modules == ["django_workflows.a", "django_workflows.b"]


def test_a_package_counts_as_its_init_but_not_for_its_own_modules(tmp_path):
    root = package(
        tmp_path,
        {
            "engine/__init__.py": "from .steps import run\n",
            "engine/steps.py": "from . import waits\nfrom .. import errors\n",
            "engine/waits.py": "",
            "errors.py": "",
            "client.py": "from . import engine\nfrom .engine.steps import run\n",
        },
    )
    graph = import_graph(read_package(root))
    assert edges(graph, "engine.steps") == {
        "django_workflows.engine.waits",
        "django_workflows.errors",
    }
    assert edges(graph, "client") == {"django_workflows.engine", "django_workflows.engine.steps"}
    assert circles(graph) == []


def test_the_engine_importing_the_client_or_the_worker_points_up(tmp_path):
    root = package(
        tmp_path,
        {
            "client/instances.py": "",
            "worker/worker.py": "",
            "management/commands/runworkflows.py": "",
            "engine/steps.py": """\
                from django_workflows.management.commands import runworkflows


                def run():
                    from ..client.instances import start
            """,
            "engine/waits.py": "from ..worker.worker import Worker\nfrom . import steps\n",
        },
    )
    found = upward_imports(import_graph(read_package(root)), LAYERS)
    assert [str(edge) for edge in found] == [
        "django_workflows.engine.steps imports django_workflows.client.instances (line 5)",
        "django_workflows.engine.steps imports django_workflows.management.commands (line 1)",
        "django_workflows.engine.steps imports django_workflows.management.commands.runworkflows "
        "(line 1)",
        "django_workflows.engine.waits imports django_workflows.worker.worker (line 1)",
    ]


def test_the_store_importing_the_engine_or_the_schedules_points_up(tmp_path):
    root = package(
        tmp_path,
        {
            "engine/journal.py": "",
            "schedules/runner.py": "",
            "schedules/timing.py": "",
            "errors.py": "",
            "store/schedules.py": "from ..schedules import runner, timing\nfrom .. import errors\n",
            "store/instances.py": "from .schedules import x\nfrom ..engine.journal import y\n",
        },
    )
    found = upward_imports(import_graph(read_package(root)), LAYERS)
    assert [(edge.source, edge.target) for edge in found] == [
        ("django_workflows.store.instances", "django_workflows.engine.journal"),
        ("django_workflows.store.schedules", "django_workflows.schedules"),
        ("django_workflows.store.schedules", "django_workflows.schedules.runner"),
    ]


def test_a_ground_value_importing_the_models_points_up_and_a_stray_module_is_named(tmp_path):
    root = package(
        tmp_path,
        {
            "models.py": "from .errors import Bad\n",
            "errors.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .models import M\n",
            "stray.py": "",
        },
    )
    modules = read_package(root)
    found = upward_imports(import_graph(modules), LAYERS)
    assert [str(edge) for edge in found] == [
        "django_workflows.errors imports django_workflows.models (line 3)"
    ]
    assert unplaced(modules, LAYERS) == ["django_workflows.stray"]


def test_a_private_member_used_across_modules_is_reported(tmp_path):
    root = package(
        tmp_path,
        {
            "engine/lease.py": """\
                class Runtime:
                    def __init__(self):
                        self._lock = None

                    def held(self):
                        return self._lock
            """,
            "engine/steps.py": """\
                from .runtime import _helper


                def run(x, model):
                    with x._lock:
                        return model._meta, x.__class__
            """,
            "client/calls.py": "def run(x):\n    return x._lock\n",
        },
    )
    found = private_members(read_package(root), PRIVATE_STAYS_IN, DJANGO_PRIVATE)
    assert found == [
        "django_workflows/engine/steps.py:1: _helper",
        "django_workflows/engine/steps.py:5: _lock",
    ]


def test_a_vendor_test_outside_the_backends_is_reported_with_its_line(tmp_path):
    root = package(
        tmp_path,
        {
            "worker.py": 'import x\n\nif connection.vendor == "postgresql":\n    pass\n',
            "checks.py": 'vendor = "sqlite"\nif vendor == "mysql":\n    pass\n',
            "store/backends/mysql/backend.py": 'if connection.vendor in ("mysql",):\n    pass\n',
        },
    )
    assert sorted(vendor_tests(read_package(root), VENDORS_LIVE_IN)) == [
        'django_workflows/checks.py:2: if vendor == "mysql":',
        'django_workflows/worker.py:3: if connection.vendor == "postgresql":',
    ]


def test_a_long_module_is_reported_and_migrations_are_not_read(tmp_path):
    long = "x = 1\n" * (MAX_LINES + 1)
    root = package(
        tmp_path,
        {
            "store/long.py": long,
            "short.py": "x = 1\n" * MAX_LINES,
            "migrations/0001_initial.py": long + "from .. import short\n",
            "short2.py": "from .migrations import x\n",
        },
    )
    modules = read_package(root)
    assert oversized(modules, MAX_LINES) == [
        f"django_workflows/store/long.py: {MAX_LINES + 1} lines"
    ]
    assert "django_workflows.migrations.0001_initial" not in modules
