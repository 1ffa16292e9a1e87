#!/usr/bin/env bash
# Creates (once) the project's Python virtual environment and installs packages into it, so that
# no script installs Python packages system-wide (Debian's own python3 refuses that:
# "externally-managed-environment"). Prints the venv's python on stdout; everything else goes to
# stderr.
#
# Usage: tests/venv.sh [-r requirements.txt | package ...] ...
#   e.g. py="$(tests/venv.sh -r tests/integration/requirements.txt)" && "$py" -m pytest ...
# Env: BLINKDB_VENV  where the environment lives (default <repo>/target/venv; target/ is
#                    gitignored and `cargo clean` removes it with the build)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${BLINKDB_VENV:-$repo_root/target/venv}"
py="$venv/bin/python"

# A venv whose interpreter is gone (e.g. the python3 that made it was removed) is made anew.
if ! "$py" -c '' 2>/dev/null; then
    # python3 -m venv needs ensurepip, which Debian ships separately in python3-venv.
    if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            echo "venv.sh: python3 lacks ensurepip; installing Debian's python3-venv" >&2
            apt-get update -qq >&2 &&
                DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2
        else
            echo "venv.sh: python3 cannot create a virtual environment (no ensurepip);" \
                "install python3-venv (Debian) and run again" >&2
            exit 1
        fi
    fi
    echo "venv.sh: creating a Python virtual environment in $venv" >&2
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv" >&2
fi

if [ $# -gt 0 ]; then
    "$py" -m pip install -q --disable-pip-version-check "$@" >&2
fi
echo "$py"
