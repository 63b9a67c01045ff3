"""Sphinx configuration: MyST Markdown pages, the furo theme; built with -W in CI."""

from __future__ import annotations

import tomllib
from pathlib import Path

project = "django-durable-workflows"
author = "The django-durable-workflows authors"
copyright = "2026, The django-durable-workflows authors"
# The version pyproject.toml gives, so the two cannot drift apart.
with (Path(__file__).resolve().parent.parent / "pyproject.toml").open("rb") as pyproject:
    release = tomllib.load(pyproject)["project"]["version"]

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]

html_theme = "furo"
html_title = "django-durable-workflows"
