"""The guard itself: on a small package written to a temporary folder, it reports the circles, the
forbidden imports, the vendor tests and the long modules planted there, so that the house tests
cannot pass by seeing nothing."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.house.imports import (
    circles,
    forbidden_imports,
    import_graph,
    oversized,
    read_package,
    vendor_tests,
)
from tests.house.test_imports import MAX_LINES, MAY_NOT_IMPORT, VENDORS_LIVE_IN


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


def test_an_import_under_type_checking_is_no_edge_but_its_else_branch_is(tmp_path):
    root = package(
        tmp_path,
        {
            "a.py": "from . import b\n",
            "b.py": """\
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    from .a import Thing
            """,
            "c.py": """\
                import typing

                if typing.TYPE_CHECKING:
                    pass
                else:
                    from .a import Thing
            """,
        },
    )
    graph = import_graph(read_package(root))
    assert edges(graph, "b") == set()
    assert edges(graph, "c") == {"django_workflows.a"}
    assert circles(graph) == []


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


def test_the_engine_importing_the_client_breaks_the_rules(tmp_path):
    root = package(
        tmp_path,
        {
            "client.py": "",
            "worker.py": "",
            "management/commands/runworkflows.py": "",
            "engine/steps.py": """\
                from django_workflows.management.commands import runworkflows


                def run():
                    from ..client import start
            """,
            "engine/waits.py": "from ..worker import Worker\nfrom . import steps\n",
        },
    )
    found = forbidden_imports(import_graph(read_package(root)), MAY_NOT_IMPORT)
    assert [str(edge) for edge in found] == [
        "django_workflows.engine.steps imports django_workflows.client (line 5)",
        "django_workflows.engine.steps imports django_workflows.management.commands (line 1)",
        "django_workflows.engine.steps imports django_workflows.management.commands.runworkflows "
        "(line 1)",
        "django_workflows.engine.waits imports django_workflows.worker (line 1)",
    ]


def test_the_store_importing_the_engine_or_the_schedules_breaks_the_rules(tmp_path):
    root = package(
        tmp_path,
        {
            "engine/journal.py": "",
            "schedules/timing.py": "",
            "errors.py": "",
            "store/schedules.py": "from ..schedules import timing\nfrom .. import errors\n",
            "store/instances.py": "from .schedules import x\nfrom ..engine.journal import y\n",
        },
    )
    found = forbidden_imports(import_graph(read_package(root)), MAY_NOT_IMPORT)
    assert [(edge.source, edge.target) for edge in found] == [
        ("django_workflows.store.instances", "django_workflows.engine.journal"),
        ("django_workflows.store.schedules", "django_workflows.schedules"),
        ("django_workflows.store.schedules", "django_workflows.schedules.timing"),
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
