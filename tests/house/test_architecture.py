"""docs/discussions/architecture.md names every module of the package, one line each, so a
reader finds a concern from the file names; a module added, moved or renamed updates it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "django_workflows"
PAGE = ROOT / "docs" / "discussions" / "architecture.md"


def modules() -> set[str]:
    """Every module's path inside the package, but migrations and empty `__init__.py` files."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        if "migrations" in relative.parts:
            continue
        if relative.name == "__init__.py" and not path.read_text().strip():
            continue
        found.add(relative.as_posix())
    return found


def named() -> set[str]:
    """The modules the page names at the start of a list item: "- `engine/steps.py`: ..."."""
    return set(re.findall(r"^- `([\w/]+\.py)`: ", PAGE.read_text(), re.MULTILINE))


def test_the_architecture_page_names_every_module():
    missing = sorted(modules() - named())
    assert not missing, f"Modules that {PAGE.name} does not name: {', '.join(missing)}"


def test_the_architecture_page_names_no_module_that_is_gone():
    gone = sorted(named() - modules())
    assert not gone, f"Modules that {PAGE.name} names but the package has not: {', '.join(gone)}"
