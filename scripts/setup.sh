#!/usr/bin/env bash
# Installs what transportlab needs and builds it. Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v ip >/dev/null || need_apt+=(iproute2)
command -v sysctl >/dev/null || need_apt+=(procps)
command -v cargo >/dev/null || { echo "setup: cargo (Rust) is required" >&2; exit 1; }
if [ ${#need_apt[@]} -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq "${need_apt[@]}"
fi

# Python package and its dependencies (editable, so `tlab` runs this checkout).
python3 -m pip install -q --disable-pip-version-check -e '.[test]' 2>&1 | grep -v 'Running pip as the' || true
python3 -c 'import transportlab, pyroute2, pydantic, pyarrow, duckdb, matplotlib, rich, libtorrent' \
  || { echo "setup: Python dependencies failed to install" >&2; exit 1; }

cargo build --release --quiet
echo "setup: ok (binaries in target/release)"
