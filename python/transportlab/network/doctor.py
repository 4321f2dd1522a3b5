"""`tlab doctor`: checks that this machine can run experiments and says how to fix
what is missing."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from transportlab.locations import PROJECT_ROOT, binary


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


def _root() -> Check:
    ok = os.geteuid() == 0
    return Check("root", ok, "running as root" if ok else "run as root: namespaces and TUN devices need CAP_NET_ADMIN")


def _tun() -> Check:
    from transportlab.network.tun import open_tun

    if not Path("/dev/net/tun").exists():
        return Check("TUN", False, "/dev/net/tun is missing: `modprobe tun`")
    try:
        fd = open_tun(f"tlabdoc{secrets.token_hex(2)}")
    except OSError as e:
        return Check("TUN", False, f"cannot create a TUN device: {e}")
    os.close(fd)
    return Check("TUN", True, "can create TUN devices")


def _namespaces() -> Check:
    from transportlab.network import netns

    name = f"tlab-doctor-{secrets.token_hex(3)}"
    try:
        netns.create(name)
        netns.remove(name)
    except Exception as e:  # any failure here is the finding
        return Check("namespaces", False, f"cannot create a network namespace: {e}")
    return Check("namespaces", True, "can create network namespaces")


def _binaries() -> list[Check]:
    out = []
    for name in ("tlab-engine", "agent"):
        try:
            out.append(Check(name, True, str(binary(name))))
        except FileNotFoundError as e:
            out.append(Check(name, False, str(e)))
    return out


def _congestion_controls() -> Check:
    try:
        avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    except OSError as e:
        return Check("tcp congestion controls", False, str(e))
    missing = [cc for cc in ("reno", "cubic") if cc not in avail]
    if missing:
        return Check(
            "tcp congestion controls", False, f"available: {avail}; missing {missing} (modprobe tcp_{missing[0]})"
        )
    return Check("tcp congestion controls", True, " ".join(avail))


def _bpf_congestion_controls() -> Check:
    """The lab's BPF TCP congestion controls (docs/bpf.md): built, and one really loads,
    is listed by the kernel and unloads."""
    from transportlab.network import kernel_cc

    name = "bpf congestion controls"
    if (problem := kernel_cc.support_problem()) is not None:
        return Check(name, False, f"{problem}; TCP flows with cc = {' or '.join(kernel_cc.bpf_controllers())} refused")
    trial = kernel_cc.instance_name("vegas", {}, salt=f"doctor-{secrets.token_hex(4)}")
    try:
        kernel_cc.load(trial, "vegas", {})
        kernel_cc.unload(trial)
    except kernel_cc.KernelCcError as e:
        return Check(name, False, str(e))
    return Check(
        name, True, f"{', '.join(kernel_cc.bpf_controllers())} load (BPF struct_ops, pins in {kernel_cc.PIN_DIR})"
    )


def run_checks() -> list[Check]:
    checks = [_root()]
    if checks[0].ok:
        checks += [_tun(), _namespaces()]
    checks += _binaries()
    checks.append(_congestion_controls())
    checks.append(_bpf_congestion_controls())
    return checks


__all__ = ["run_checks", "Check", "PROJECT_ROOT"]
