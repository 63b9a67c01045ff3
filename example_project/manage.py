#!/usr/bin/env python
"""Django's command-line utility for the example shop."""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    """Run a management command with the example shop's settings."""
    # The shop and its settings live next to this file, whatever the working directory;
    # a checkout that did not `pip install` the package finds it one level up.
    sys.path.insert(0, str(HERE))
    sys.path.append(str(HERE.parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shopsite.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
