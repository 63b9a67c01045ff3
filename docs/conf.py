"""Sphinx configuration: MyST Markdown pages, the furo theme; built with -W in CI."""

from __future__ import annotations

project = "django-durable-workflows"
author = "The django-durable-workflows authors"
copyright = "2026, The django-durable-workflows authors"
release = "0.1.0.dev0"

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]

html_theme = "furo"
html_title = "django-durable-workflows"
