#!/usr/bin/env bash
# Installs what transportlab needs and builds it. Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v ip >/dev/null || need_apt+=(iproute2)
command -v sysctl >/dev/null || need_apt+=(procps)
# Tests open the engine's pcapng captures with the tool people use (tshark).
command -v tshark >/dev/null || need_apt+=(tshark)
# Tests open the reports in a real browser (headless Chromium over the DevTools Protocol).
command -v chromium >/dev/null || need_apt+=(chromium)
# The lab's BPF congestion controls for kernel TCP (bpf/, docs/bpf.md): clang builds them
# against the running kernel's BTF, bpftool writes vmlinux.h, libbpf loads them.
command -v clang >/dev/null || need_apt+=(clang llvm)
command -v bpftool >/dev/null || need_apt+=(bpftool)
[ -e /usr/include/bpf/bpf_helpers.h ] || need_apt+=(libbpf-dev)
[ -e /usr/include/libelf.h ] || need_apt+=(libelf-dev)
# Third-party stacks the flows run (docs/stacks.md), upstream versions pinned (Debian's
# security revisions of them allowed): ngtcp2's example HTTP/3 client and server, nginx
# (its "light" flavour has HTTP/2 and TLS) and curl.
dpkg-query -W -f='${Version}' ngtcp2-client 2>/dev/null | grep -q '^0\.12\.1' || need_apt+=('ngtcp2-client=0.12.1*' 'ngtcp2-server=0.12.1*')
dpkg-query -W -f='${Version}' nginx-light 2>/dev/null | grep -q '^1\.22\.1' || need_apt+=('nginx-light=1.22.1*')
command -v curl >/dev/null || need_apt+=('curl=7.88.1*')
command -v cargo >/dev/null || { echo "setup: cargo (Rust) is required" >&2; exit 1; }
command -v go >/dev/null || [ -x /usr/local/go/bin/go ] || { echo "setup: go is required (endpoints/quic-go)" >&2; exit 1; }
if [ ${#need_apt[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi

# Python package and its dependencies (editable, so `tlab` runs this checkout).
python3 -m pip install -q --disable-pip-version-check -e '.[test]' 2>&1 | grep -v 'Running pip as the' || true
python3 -c 'import transportlab, pyroute2, pydantic, pyarrow, duckdb, matplotlib, rich, websockets, distributed, libtorrent, aioquic, hypercorn' \
  || { echo "setup: Python dependencies failed to install" >&2; exit 1; }

cargo build --release --quiet
# The lab's HTTP/3 endpoint on quic-go (module versions pinned by its go.mod and go.sum).
(cd endpoints/quic-go && PATH="$PATH:/usr/local/go/bin" GOFLAGS=-mod=readonly go build -trimpath -o ../../target/release/tlab-quic-go .)
if [ -e /sys/kernel/btf/vmlinux ]; then
  make -s -C bpf
else
  echo "setup: this kernel has no BTF (/sys/kernel/btf/vmlinux): the BPF congestion controls are not built" >&2
fi
echo "setup: ok (binaries in target/release)"
