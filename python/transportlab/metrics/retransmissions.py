"""Retransmissions: from TCP sequence numbers and payload lengths in the log, and the
agent's own count from TCP_INFO samples."""

from __future__ import annotations

import numpy as np
import pandas as pd

from transportlab.artefacts.packetlog import ARRIVAL, FLAG_COPY
from transportlab.metrics._records import col, take
from transportlab.metrics.logflows import Flow, flow_mask


def unwrap_seq(seq) -> np.ndarray:
    """32-bit TCP sequence numbers made monotonic-comparable (int64): each step is taken
    as the signed 32-bit difference from the previous number, so wrap-around at 2^32 is
    followed as long as consecutive segments are less than 2^31 bytes apart."""
    s = np.asarray(seq).astype(np.int64)
    if len(s) == 0:
        return s
    step = ((np.diff(s) + (1 << 31)) % (1 << 32)) - (1 << 31)
    return np.concatenate(([s[0]], s[0] + np.cumsum(step)))


def retransmissions_from_log(records, flow: Flow, direction: int, event: int = ARRIVAL) -> pd.DataFrame:
    """The flow's TCP retransmissions seen in the log: the data segments whose sequence
    range was already (partly) seen at `direction`.

    Segments are the flow's records with `event` (default ARRIVAL: at the first direction
    of the path this is the order the sender sent them) at `direction`, original packets
    only (a duplicate copy is not a retransmission), in time order, with their transport
    payload (`payload_len`, which the engine parsed from the TCP header); segments without
    payload (pure ACKs, SYN, FIN without data) are ignored. A segment is a retransmission
    when its (unwrapped) start seq is below the highest end (seq + payload) of the earlier
    segments. Counts reordered originals if measured after a reordering direction.
    Returns the flagged segments: columns t_ns, packet_id, tcp_seq, size.
    """
    m = flow_mask(records, flow) & (col(records, "direction") == direction) & (col(records, "event") == event)
    m &= (col(records, "flags") & FLAG_COPY) == 0
    m &= col(records, "payload_len") > 0
    seg = take(records, m)
    t = col(seg, "t_ns").astype(np.int64)
    order = np.argsort(t, kind="stable")
    t = t[order]
    seq_raw = col(seg, "tcp_seq")[order]
    size = col(seg, "size")[order].astype(np.int64)
    seq = unwrap_seq(seq_raw)
    end = seq + col(seg, "payload_len")[order].astype(np.int64)
    prev_end = np.empty_like(end)
    if len(end):
        prev_end[0] = np.iinfo(np.int64).min
        prev_end[1:] = np.maximum.accumulate(end)[:-1]
    retx = seq < prev_end
    return pd.DataFrame(
        {
            "t_ns": t[retx],
            "packet_id": col(seg, "packet_id")[order][retx].astype(np.uint64),
            "tcp_seq": seq_raw[retx].astype(np.uint32),
            "size": size[retx],
        }
    )


def count_retransmissions_from_log(records, flow: Flow, direction: int, **kwargs) -> int:
    """Number of segments `retransmissions_from_log` flags (same arguments)."""
    return len(retransmissions_from_log(records, flow, direction, **kwargs))


def retransmissions_from_tcp_info(
    tcp_info: pd.DataFrame, start_ns: int | None = None, end_ns: int | None = None
) -> int:
    """Retransmitted segments the kernel counted, from an agent's TCP_INFO series
    (columns `t_ns`, `total_retrans` = tcpi_total_retrans, cumulative per connection).

    Without a window: the last sample's `total_retrans`. With a window: the value at the
    last sample at or before `end_ns` (default: last sample) minus the value at the last
    sample before `start_ns` (0 if none): retransmissions counted inside [start, end]
    at the sampling resolution.
    """
    df = tcp_info.sort_values("t_ns", kind="stable")
    t = df["t_ns"].to_numpy(np.int64)
    v = df["total_retrans"].to_numpy(np.int64)
    if len(v) == 0:
        return 0
    hi = len(v) - 1 if end_ns is None else np.searchsorted(t, end_ns, side="right") - 1
    last = int(v[hi]) if hi >= 0 else 0
    if start_ns is None:
        return last
    lo = np.searchsorted(t, start_ns, side="left") - 1
    first = int(v[lo]) if lo >= 0 else 0
    return last - first
