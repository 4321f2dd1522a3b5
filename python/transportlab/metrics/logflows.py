"""Flow identification. A flow is the 5-tuple (src, dst, sport, dport, proto) of the
packets in the log; the data direction and the ack direction of one connection are two
flows (`Flow.reverse()` gives one from the other)."""

from __future__ import annotations

import ipaddress
from typing import NamedTuple

import numpy as np
import pandas as pd

from transportlab.artefacts.packetlog import ARRIVAL, NO_DIRECTION
from transportlab.metrics._records import and_mask, col, take

PROTOCOLS = {"icmp": 1, "tcp": 6, "udp": 17}
_PROTO_NAMES = {v: k for k, v in PROTOCOLS.items()}


class Flow(NamedTuple):
    """A 5-tuple as the log stores it: IPv4 addresses as integers, ports, IP protocol number."""

    src: int
    dst: int
    sport: int
    dport: int
    proto: int

    @classmethod
    def of(cls, src: str | int, dst: str | int, sport: int, dport: int, proto: str | int = "tcp") -> Flow:
        """A flow from human values: dotted addresses (or integers) and a protocol name
        ("tcp", "udp", "icmp") or number."""
        p = PROTOCOLS[proto.lower()] if isinstance(proto, str) else int(proto)
        return cls(int(ipaddress.IPv4Address(src)), int(ipaddress.IPv4Address(dst)), int(sport), int(dport), p)

    def reverse(self) -> Flow:
        """The flow of the opposite direction (e.g. the ack flow of a data flow)."""
        return Flow(self.dst, self.src, self.dport, self.sport, self.proto)

    def __str__(self) -> str:
        proto = _PROTO_NAMES.get(self.proto, str(self.proto))
        return f"{ipaddress.IPv4Address(self.src)}:{self.sport}>{ipaddress.IPv4Address(self.dst)}:{self.dport}/{proto}"


def flow_mask(records, flow: Flow) -> np.ndarray:
    """Boolean array: which records belong to `flow` (all five fields equal)."""
    return (
        (col(records, "src") == flow.src)
        & (col(records, "dst") == flow.dst)
        & (col(records, "sport") == flow.sport)
        & (col(records, "dport") == flow.dport)
        & (col(records, "proto") == flow.proto)
    )


def select(records, flow: Flow | None = None, direction: int | None = None, event: int | None = None):
    """The records of `flow` (any if None) at link direction `direction` (any if None;
    `packetlog.NO_DIRECTION` selects engine-level drops) with event code `event`
    (ARRIVAL=1, DEPARTURE=2, DROP=3; any if None). Same container type as `records`."""
    mask = None
    if flow is not None:
        mask = flow_mask(records, flow)
    if direction is not None:
        mask = and_mask(mask, col(records, "direction") == direction)
    if event is not None:
        mask = and_mask(mask, col(records, "event") == event)
    if mask is None:
        return records
    return take(records, mask)


def flow_codes(records) -> tuple[np.ndarray, list[Flow]]:
    """Integer flow label per record (int64, 0..k-1) and the list of the k flows, in order
    of first appearance in the log. Hash-based (pandas.factorize), no per-record loop."""
    n = len(records)
    if n == 0:
        return np.zeros(0, dtype=np.int64), []
    hi = (col(records, "src").astype(np.uint64) << np.uint64(32)) | col(records, "dst").astype(np.uint64)
    lo = (
        (col(records, "sport").astype(np.uint64) << np.uint64(24))
        | (col(records, "dport").astype(np.uint64) << np.uint64(8))
        | col(records, "proto").astype(np.uint64)
    )
    c_hi, u_hi = pd.factorize(hi)
    c_lo, u_lo = pd.factorize(lo)
    combined = c_hi.astype(np.int64) * len(u_lo) + c_lo
    codes, uniq = pd.factorize(combined)
    flows = []
    for u in np.asarray(uniq):
        h = int(u_hi[u // len(u_lo)])
        l = int(u_lo[u % len(u_lo)])
        flows.append(Flow(h >> 32, h & 0xFFFFFFFF, (l >> 24) & 0xFFFF, (l >> 8) & 0xFFFF, l & 0xFF))
    return codes.astype(np.int64), flows


def flows(records) -> pd.DataFrame:
    """One row per distinct 5-tuple in the log: `flow` (Flow), `name` (str(flow)),
    `records` (count of log records), `first_ns`, `last_ns` (event times, ns).
    Engine-level drops of non-IPv4 packets appear as the all-zero tuple."""
    codes, fl = flow_codes(records)
    t = col(records, "t_ns")
    g = pd.Series(t.astype(np.int64)).groupby(codes, sort=True).agg(["size", "min", "max"])
    return pd.DataFrame(
        {
            "flow": fl,
            "name": [str(f) for f in fl],
            "records": g["size"].to_numpy(np.int64),
            "first_ns": g["min"].to_numpy(np.int64),
            "last_ns": g["max"].to_numpy(np.int64),
        }
    )


def flow_path(records, flow: Flow) -> tuple[int, ...]:
    """The link directions the flow's packets cross, in path order, inferred from the log:
    directions sorted by the time of the flow's first arrival there (a packet reaches a
    later hop only after the earlier ones). For a multipath flow the result interleaves
    its paths; pass the path explicitly to the metrics instead."""
    sel = select(records, flow, event=ARRIVAL)
    d = col(sel, "direction")
    keep = d != NO_DIRECTION
    d = d[keep]
    if len(d) == 0:
        return ()
    t = col(sel, "t_ns")[keep]
    first = pd.Series(t.astype(np.int64)).groupby(d).min().sort_values(kind="stable")
    return tuple(int(x) for x in first.index)
