"""Reads the engine's packet event log (docs/packet-log.md) into NumPy/pandas without
parsing: the file is a fixed-width record array behind a 16-byte header."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from transportlab import contract

MAGIC = b"TLABLOG\0"
HEADER_SIZE = 16
RECORD = np.dtype(
    [
        ("t_ns", "<u8"),
        ("packet_id", "<u8"),
        ("src", "<u4"),
        ("dst", "<u4"),
        ("sport", "<u2"),
        ("dport", "<u2"),
        ("size", "<u2"),
        ("direction", "<u2"),
        ("proto", "u1"),
        ("event", "u1"),
        ("reason", "u1"),
        ("flags", "u1"),
        ("tcp_seq", "<u4"),
        ("t_actual_ns", "<u8"),
        ("payload_len", "<u2"),
    ]
)

VERSION, _RECORD_SIZE = contract.packet_log_format()
if RECORD.itemsize != _RECORD_SIZE:  # the dtype above must follow the contract's record size
    raise ImportError(f"packet log record is {RECORD.itemsize} bytes here, {_RECORD_SIZE} in {contract.PATH}")

_EVENTS = contract.packet_log_events()
ARRIVAL, DEPARTURE, DROP = _EVENTS["arrival"], _EVENTS["departure"], _EVENTS["drop"]
NO_DIRECTION = 0xFFFF
FLAG_COPY = contract.packet_log_flags()["copy"]
FLAG_CE_MARKED = contract.packet_log_flags()["ce_marked"]
REASONS = contract.drop_reasons()
UNINTENDED_REASONS = contract.unintended_reasons()


class PacketLogError(ValueError):
    pass


def read_records(path: str | Path) -> np.ndarray:
    """The log as a structured NumPy array (memory-mapped: no copy, no parsing)."""
    path = Path(path)
    with open(path, "rb") as f:
        header = f.read(HEADER_SIZE)
    if len(header) < HEADER_SIZE or header[:8] != MAGIC:
        raise PacketLogError(f"{path}: not a transportlab packet log")
    version = int.from_bytes(header[8:12], "little")
    size = int.from_bytes(header[12:16], "little")
    if version != VERSION or size != RECORD.itemsize:
        raise PacketLogError(
            f"{path}: packet log version {version} with {size}-byte records; this transportlab reads "
            f"version {VERSION} ({RECORD.itemsize}-byte records)"
        )
    n = (path.stat().st_size - HEADER_SIZE) // RECORD.itemsize
    if n == 0:
        return np.zeros(0, dtype=RECORD)
    return np.memmap(path, dtype=RECORD, mode="r", offset=HEADER_SIZE, shape=(n,))


def actual_time(records: np.ndarray) -> np.ndarray:
    """Real times of the records (`t_actual_ns`: the kernel's receive stamp of an arrival
    from a host, the hand-over of a departure to a host), falling back to the model's
    `t_ns` where a record has none (0, as in hand-made logs)."""
    t = np.asarray(records["t_actual_ns"])
    return np.where(t != 0, t, np.asarray(records["t_ns"]))


def read_frame(path: str | Path) -> pd.DataFrame:
    return pd.DataFrame(read_records(path))


def write_records(path: str | Path, records: np.ndarray) -> None:
    """Writes a log (used by tests to build hand-made logs)."""
    with open(path, "wb") as f:
        f.write(MAGIC + VERSION.to_bytes(4, "little") + RECORD.itemsize.to_bytes(4, "little"))
        f.write(np.asarray(records, dtype=RECORD).tobytes())
