"""`tlab clean`: removes what runs that are no longer alive left behind — their
processes (by recorded PID and start time, or by membership of a tlab namespace),
namespaces, TUN devices, veth pairs and the BPF congestion controls they registered.
Live runs are left alone."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time

from transportlab.network import kernel_cc, netns
from transportlab.network.registry import ProcessRecord, all_records, is_alive, process_start_time

# Both ends of a run's veth pairs (network/live.py: tlab<run id>h<i>, tlab<run id>e<i>).
VETH_NAME = re.compile(r"tlab[0-9a-f]{6}[he][0-9]+")


def _kill(pid: int, start_time: int | None) -> bool:
    """SIGKILL `pid` only if it is still the process we recorded."""
    if start_time is not None and process_start_time(pid) != start_time:
        return False
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


def _pids_in_namespace(name: str) -> list[int]:
    res = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
    return [int(p) for p in res.stdout.split()]


def _unload_kernel_ccs(run_id: str, names: list[str], done: list[str]) -> list[str]:
    """Unregisters a dead run's BPF congestion controls; returns those that would not go."""
    kept = []
    for name in names:
        try:
            if kernel_cc.unload(name):
                done.append(f"run {run_id}: unregistered TCP congestion control {name}")
        except kernel_cc.KernelCcError as e:
            done.append(f"run {run_id}: could not unregister {name}: {e}")
            kept.append(name)
    return kept


def clean() -> list[str]:
    """Returns one line per thing removed."""
    done: list[str] = []
    live_namespaces: set[str] = set()
    for path, record in all_records():
        if record is None:
            path.unlink(missing_ok=True)
            done.append(f"removed unreadable run record {path}")
            continue
        if is_alive(record.owner):
            live_namespaces.update(record.namespaces)
            continue
        for p in record.processes:
            if is_alive(p) and _kill(p.pid, p.start_time):
                done.append(f"run {record.run_id}: killed {p.argv0} (pid {p.pid})")
        for ns in record.namespaces:
            for pid in _pids_in_namespace(ns) if ns in netns.list_names() else []:
                if _kill(pid, None):
                    done.append(f"run {record.run_id}: killed pid {pid} inside {ns}")
        for ns in record.namespaces:
            if ns in netns.list_names():
                netns.remove(ns)
                done.append(f"run {record.run_id}: removed namespace {ns}")
        for ifname in record.tun_devices + record.veth_devices:
            if netns.remove_root_link(ifname):
                done.append(f"run {record.run_id}: removed device {ifname}")
        kept = _unload_kernel_ccs(record.run_id, record.kernel_ccs, done)
        if kept:
            record.kernel_ccs = kept
            record.save()
        else:
            path.unlink(missing_ok=True)
    # Namespaces of ours that no record explains (the registry lives in /run, which a
    # reboot or a hand clean-up empties).
    for ns in netns.list_names("tlab-"):
        if ns in live_namespaces:
            continue
        for pid in _pids_in_namespace(ns):
            if _kill(pid, None):
                done.append(f"killed pid {pid} inside {ns}")
        time.sleep(0.05)
        netns.remove(ns)
        done.append(f"removed namespace {ns}")
    # veth ends of ours left in the root namespace that no live run owns (a run killed
    # between creating a pair and moving its ends).
    live_devices = {
        d for _, r in all_records() if r is not None and is_alive(r.owner) for d in r.veth_devices + r.tun_devices
    }
    for ifname in netns.root_links("tlab"):
        if VETH_NAME.fullmatch(ifname) and ifname not in live_devices and netns.remove_root_link(ifname):
            done.append(f"removed device {ifname}")
    return done


__all__ = ["clean", "ProcessRecord"]
