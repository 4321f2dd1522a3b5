"""Network namespaces as hosts: create, configure (TUN inside, address, route,
sysctls), run commands in them, remove. All netlink work goes through pyroute2."""

from __future__ import annotations

import subprocess

from pyroute2 import IPRoute, NetNS, netns

# In a run's raw/: each host's UDP counters at the end of the run (network.live writes it,
# artefacts.rundir reads it).
HOST_UDP_COUNTERS = "host_udp.json"


class HostSetupError(RuntimeError):
    pass


def create(name: str) -> None:
    netns.create(name)


def remove(name: str) -> None:
    if name in netns.listnetns():
        netns.remove(name)


def list_names(prefix: str = "tlab") -> list[str]:
    return [n for n in netns.listnetns() if n.startswith(prefix)]


def exec_argv(name: str, argv: list[str]) -> list[str]:
    """argv that runs `argv` inside namespace `name` (`ip netns exec` execs in place,
    so the PID of the child is the PID of the command)."""
    return ["ip", "netns", "exec", name, *argv]


def set_sysctls(name: str, values: dict[str, str], host: str) -> None:
    if not values:
        return
    args = [f"{k}={v}" for k, v in values.items()]
    res = subprocess.run(exec_argv(name, ["sysctl", "-q", "-w", *args]), capture_output=True, text=True)
    if res.returncode != 0:
        raise HostSetupError(f"host {host!r}: sysctl failed: {res.stderr.strip()}")


def move_link(ifname: str, name: str) -> None:
    with IPRoute() as ipr:
        idx = ipr.link_lookup(ifname=ifname)
        if not idx:
            raise HostSetupError(f"interface {ifname} not found in the root namespace")
        ipr.link("set", index=idx[0], net_ns_fd=name)


def configure_tun(name: str, ifname: str, address: str, mtu: int, txqueuelen: int) -> None:
    """Brings lo and the TUN up, gives the TUN a /32 and sends everything through it."""
    with NetNS(name) as ns:
        lo = ns.link_lookup(ifname="lo")[0]
        ns.link("set", index=lo, state="up")
        idx = ns.link_lookup(ifname=ifname)[0]
        ns.link("set", index=idx, mtu=mtu, txqlen=txqueuelen, state="up")
        ns.addr("add", index=idx, address=address, prefixlen=32)
        ns.route("add", dst="0.0.0.0/0", oif=idx)


def remove_root_link(ifname: str) -> bool:
    """Deletes a leftover TUN device in the root namespace; True if one was there."""
    with IPRoute() as ipr:
        idx = ipr.link_lookup(ifname=ifname)
        if not idx:
            return False
        ipr.link("del", index=idx[0])
        return True


def tx_dropped(name: str, ifname: str) -> int:
    """Packets the kernel dropped on their way out of the host into its TUN device
    (the device's ring was full because the engine did not read fast enough)."""
    with NetNS(name) as ns:
        idx = ns.link_lookup(ifname=ifname)
        if not idx:
            return 0
        link = ns.get_links(idx[0])[0]
        stats = link.get_attr("IFLA_STATS64") or link.get_attr("IFLA_STATS")
        return int(stats["tx_dropped"]) if stats else 0


def parse_snmp(text: str) -> dict[str, dict[str, int]]:
    """/proc/net/snmp's counters by protocol: each protocol is a line of names and a line
    of values, both led by "Proto:" ({"Udp": {"InDatagrams": 5, "RcvbufErrors": 0, …}})."""
    lines = text.splitlines()
    out: dict[str, dict[str, int]] = {}
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        proto, _, keys = names.partition(":")
        out[proto] = {k: int(v) for k, v in zip(keys.split(), values.partition(":")[2].split(), strict=True)}
    return out


def snmp(name: str) -> dict[str, dict[str, int]]:
    """Namespace `name`'s /proc/net/snmp counters (`parse_snmp`)."""
    res = subprocess.run(exec_argv(name, ["cat", "/proc/net/snmp"]), capture_output=True, text=True, check=True)
    return parse_snmp(res.stdout)


def root_links(prefix: str = "tlab") -> list[str]:
    """Names of the root namespace's interfaces starting with `prefix`."""
    with IPRoute() as ipr:
        names = [link.get_attr("IFLA_IFNAME") for link in ipr.get_links()]
    return [n for n in names if n and n.startswith(prefix)]
