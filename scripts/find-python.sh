#!/usr/bin/env bash
# scripts/find-python.sh 3.12 [3.13 ...]: prints the path of the first of these Pythons that runs.
# Looks on PATH, then in pyenv's versions (pyenv's shims for a version that is not the global one
# exist but refuse to run, so each candidate is tried, not just found).
set -uo pipefail
for version in "$@"; do
    candidates=("$(command -v "python$version" 2>/dev/null)")
    if command -v pyenv >/dev/null 2>&1; then
        root="$(pyenv root)"
        for dir in "$root"/versions/"$version".*/bin; do
            candidates+=("$dir/python$version")
        done
    fi
    for candidate in "${candidates[@]}"; do
        if [[ -n "$candidate" ]] && "$candidate" -c "" >/dev/null 2>&1; then
            # The real interpreter, not a shim that depends on the caller's pyenv version.
            "$candidate" -c "import sys; print(sys.executable)"
            exit 0
        fi
    done
done
echo "none of Python $* found (on PATH or in pyenv)" >&2
exit 1
