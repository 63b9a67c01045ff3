#!/usr/bin/env bash
# scripts/venv.sh PYTHON DIR: creates a virtualenv in DIR.
# Debian's own python3 has no ensurepip until python3-venv is installed: install it when root.
set -euo pipefail
python="${1:-python3}"
dir="${2:-.venv}"

if "$python" -m venv "$dir"; then
    exit 0
fi
rm -rf "$dir"
if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    echo "Installing Debian's python3-venv..." >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    exec "$python" -m venv "$dir"
fi
echo "Cannot create a virtualenv with $python: run 'sudo apt-get install python3-venv'." >&2
exit 1
