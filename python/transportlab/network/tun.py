"""TUN devices: opened in the root namespace (the engine keeps the descriptor), then
moved into a host's namespace, where they keep working through that descriptor."""

from __future__ import annotations

import fcntl
import os
import struct

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
IFNAMSIZ = 16


def open_tun(name: str) -> int:
    """Creates TUN device `name` (IFF_TUN, no packet-info header) and returns its fd.

    The device lives as long as the descriptor: when every holder has closed it, the
    kernel removes the device, which makes teardown automatic.
    """
    if len(name) >= IFNAMSIZ:
        raise ValueError(f"interface name {name!r} is longer than {IFNAMSIZ - 1} characters")
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_CLOEXEC)
    try:
        ifr = struct.pack("16sH22x", name.encode(), IFF_TUN | IFF_NO_PI)
        fcntl.ioctl(fd, TUNSETIFF, ifr)
    except BaseException:
        os.close(fd)
        raise
    return fd
