"""Reads the engine's pcapng capture (`raw/capture.pcapng`, docs/engine-config.md): one
interface per captured link direction. Only what the engine writes is read: little-endian
sections, interface description blocks and enhanced packet blocks (other block types
are skipped)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

SHB, IDB, EPB = 0x0A0D0D0A, 1, 6
BYTE_ORDER_MAGIC = 0x1A2B3C4D
IF_NAME = 2


class PcapngError(ValueError):
    pass


@dataclass
class Interface:
    name: str
    linktype: int
    snaplen: int
    packets: int = 0
    original_bytes: int = 0  # sum of the packets' original lengths
    first_ns: int | None = None
    last_ns: int | None = None
    block: bytes = b""  # the interface description block as written
    packet_blocks: list[bytes] = field(default_factory=list)


def _blocks(data: bytes, path: Path):
    o = 0
    while o < len(data):
        if o + 12 > len(data):
            raise PcapngError(f"{path}: truncated block at byte {o}")
        kind, length = struct.unpack_from("<II", data, o)
        if length < 12 or length % 4 or o + length > len(data):
            raise PcapngError(f"{path}: block at byte {o} has length {length}")
        if struct.unpack_from("<I", data, o + length - 4)[0] != length:
            raise PcapngError(f"{path}: block at byte {o}: its two lengths differ")
        yield kind, data[o : o + length]
        o += length


def _options(body: bytes) -> dict[int, bytes]:
    out, o = {}, 0
    while o + 4 <= len(body):
        code, length = struct.unpack_from("<HH", body, o)
        if code == 0:
            break
        out[code] = body[o + 4 : o + 4 + length]
        o += 4 + (length + 3) // 4 * 4
    return out


def read(path: str | Path) -> list[Interface]:
    """The capture's interfaces in file order, with their packets."""
    path = Path(path)
    data = path.read_bytes()
    interfaces: list[Interface] = []
    for i, (kind, block) in enumerate(_blocks(data, path)):
        if i == 0 and (kind != SHB or struct.unpack_from("<I", block, 8)[0] != BYTE_ORDER_MAGIC):
            raise PcapngError(f"{path}: not a little-endian pcapng file")
        if kind == IDB:
            linktype, _, snaplen = struct.unpack_from("<HHI", block, 8)
            name = _options(block[16:-4]).get(IF_NAME, b"").decode(errors="replace")
            interfaces.append(Interface(name or f"interface {len(interfaces)}", linktype, snaplen, block=block))
        elif kind == EPB:
            iface, hi, lo, _, orig = struct.unpack_from("<IIIII", block, 8)
            if iface >= len(interfaces):
                raise PcapngError(f"{path}: a packet of interface {iface}, which is not described")
            itf, t = interfaces[iface], hi << 32 | lo
            itf.packets += 1
            itf.original_bytes += orig
            itf.first_ns = t if itf.first_ns is None else itf.first_ns
            itf.last_ns = t
            itf.packet_blocks.append(block)
    return interfaces


def extract(path: str | Path, name: str, out: str | Path) -> int:
    """Writes the packets of interface `name` alone to a new pcapng file `out` (its one
    interface, numbered 0); returns how many."""
    path = Path(path)
    interfaces = read(path)
    chosen = next((i for i in interfaces if i.name == name), None)
    if chosen is None:
        raise PcapngError(f"{path}: no interface {name!r}; it has {', '.join(i.name for i in interfaces)}")
    shb = next(block for kind, block in _blocks(path.read_bytes(), path) if kind == SHB)
    with open(out, "wb") as f:
        f.write(shb)
        f.write(chosen.block)
        for block in chosen.packet_blocks:
            f.write(block[:8] + struct.pack("<I", 0) + block[12:])
    return chosen.packets
