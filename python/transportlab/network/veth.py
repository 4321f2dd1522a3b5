"""veth pairs between a host's namespace and the engine's: created in the root namespace,
offloads switched off there (ethtool ioctls, so no `ethtool` binary is needed), then each
end moved into its namespace. With TSO/GSO/GRO and checksum offload off, every packet a
host sends is at most one MTU and carries its own checksums, so the engine forwards
frames as they are (docs/engine-config.md)."""

from __future__ import annotations

import ctypes
import fcntl
import socket
import struct
import subprocess

from pyroute2 import IPRoute

SIOCETHTOOL = 0x8946
# Legacy ethtool get/set pairs (linux/ethtool.h): (name, get, set).
OFFLOADS = (
    ("tx-checksumming", 0x16, 0x17),
    ("scatter-gather", 0x18, 0x19),
    ("tcp-segmentation-offload", 0x1E, 0x1F),
    ("generic-segmentation-offload", 0x23, 0x24),
    ("generic-receive-offload", 0x2B, 0x2C),
)
# The gateway every host routes through: a link-local address with a permanent
# neighbour entry for the engine's MAC, so hosts never ARP.
GATEWAY = "169.254.0.1"


class VethError(RuntimeError):
    pass


def _ethtool(ifname: str, cmd: int, data: int = 0) -> int:
    buf = ctypes.create_string_buffer(struct.pack("II", cmd, data))
    ifr = struct.pack("16sP", ifname.encode(), ctypes.addressof(buf))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s.fileno(), SIOCETHTOOL, ifr)
    return struct.unpack("II", buf.raw[:8])[1]


def offloads_off(ifname: str) -> None:
    """Switches every segmentation/receive/checksum offload off and checks that it is."""
    for _, _, set_cmd in OFFLOADS:
        _ethtool(ifname, set_cmd, 0)
    on = [name for name, get_cmd, _ in OFFLOADS if _ethtool(ifname, get_cmd)]
    if on:
        raise VethError(f"{ifname}: offloads still on after switching them off: {', '.join(on)}")


def offloads(ifname: str) -> dict[str, bool]:
    return {name: bool(_ethtool(ifname, get_cmd)) for name, get_cmd, _ in OFFLOADS}


def mac(kind: str, index: int) -> str:
    """Locally administered MACs: engine end `02:74:6c:00:<i>:01`, host end `…:02`."""
    return f"02:74:6c:{index >> 8:02x}:{index & 0xFF:02x}:{1 if kind == 'engine' else 2:02x}"


def create_pair(host_if: str, engine_if: str, host_mac: str, engine_mac: str, mtu: int) -> None:
    with IPRoute() as ipr:
        ipr.link("add", ifname=host_if, kind="veth", peer={"ifname": engine_if})
        for ifname, address in ((host_if, host_mac), (engine_if, engine_mac)):
            idx = ipr.link_lookup(ifname=ifname)[0]
            ipr.link("set", index=idx, address=address, mtu=mtu)
    for ifname in (host_if, engine_if):
        offloads_off(ifname)


def _ip(*args: str) -> None:
    res = subprocess.run(["ip", *args], capture_output=True, text=True)
    if res.returncode != 0:
        raise VethError(f"ip {' '.join(args)}: {res.stderr.strip()}")


def configure_host(ns: str, ifname: str, address: str, engine_mac: str, gateway: str = GATEWAY) -> None:
    """lo and the veth up, the host's /32, NOARP, a permanent neighbour for the engine's
    MAC behind GATEWAY, and the default route through it."""
    _ip("-n", ns, "link", "set", "lo", "up")
    _ip("-n", ns, "link", "set", ifname, "arp", "off", "up")
    _ip("-n", ns, "addr", "add", f"{address}/32", "dev", ifname)
    _ip("-n", ns, "neigh", "replace", gateway, "lladdr", engine_mac, "dev", ifname, "nud", "permanent")
    _ip("-n", ns, "route", "add", "default", "via", gateway, "dev", ifname, "onlink")


def configure_engine_end(ns: str, ifname: str) -> None:
    _ip("-n", ns, "link", "set", ifname, "arp", "off", "up")


def steer_receive(ns: str, ifname: str, cpus: set[int]) -> None:
    """Receive packet steering (RPS): packets the engine hands to this end are processed
    by the receiving host's stack on `cpus`, not inside the engine's send on its own CPU
    (the sysfs file is per namespace, so it is written from inside `ns`)."""
    mask = f"{sum(1 << c for c in cpus):x}"
    path = f"/sys/class/net/{ifname}/queues/rx-0/rps_cpus"
    res = subprocess.run(["ip", "netns", "exec", ns, "tee", path], input=mask, capture_output=True, text=True)
    if res.returncode != 0:
        raise VethError(f"{ns}: {path} = {mask}: {res.stderr.strip()}")
