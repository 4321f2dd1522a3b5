"""Where a probe's one-way time goes, per hop, from the probe agents' stamps and the
packet log: the sender's stack to the engine's arrival stamp (the kernel's receive time),
the engine's hand-over lateness (actual − due), and the engine's hand-over to the
receiving agent's read. The last one is outside the link model: it adds to the
configured delay whatever the engine does, and is what a quiet (sparse-traffic) host
costs when its CPU wakes slowly (docs/architecture.md, "What this machine kind does")."""

from __future__ import annotations

import numpy as np
import pandas as pd

from transportlab.artefacts.packetlog import ARRIVAL, DEPARTURE
from transportlab.metrics._records import actual_t, col, take

UDP = 17


def _packets(records, mask: np.ndarray) -> pd.DataFrame:
    """One row per packet of `mask` that left the network: its first arrival stamp (from
    its sending host) and its last departure (to its receiving host), due and actual,
    in arrival order."""
    r = take(records, mask)
    df = pd.DataFrame(
        {"id": col(r, "packet_id"), "event": col(r, "event"), "due": col(r, "t_ns"), "actual": actual_t(r)}
    ).astype({"due": np.int64, "actual": np.int64})
    arrived = df[df.event == ARRIVAL].groupby("id")["actual"].min().rename("arrival")
    left = df[df.event == DEPARTURE].sort_values("due").groupby("id")[["due", "actual"]].last()
    return left.join(arrived, how="inner").sort_values("arrival")


def probe_hops(records, series: pd.DataFrame, port: int) -> dict[str, float | int] | None:
    """Medians in µs over a probe's packets (`series`: the probe agent's rows, `send_ns`,
    `recv_ns`, `echo_ns`; the echo on UDP `port`, stamping its receive time):
    `stack_to_engine_us` (forward: send → engine arrival stamp), `handover_lateness_us`
    (both ways), `handover_to_read_us` (forward: hand-over → the echo's read) and
    `handover_to_read_reverse_us` (hand-over → the probe's read). Packets are matched
    to probes in order; None when they cannot be (probes lost, no stamps, no log)."""
    if series is None or series.empty or "echo_ns" not in series or len(records) == 0:
        return None
    answered = series.dropna(subset=["recv_ns", "echo_ns"]).sort_values("send_ns")
    if len(answered) != len(series):
        return None  # a lost probe: the order no longer pairs packets with probes
    udp = col(records, "proto") == UDP
    fwd = _packets(records, udp & (col(records, "dport") == port))
    rev = _packets(records, udp & (col(records, "sport") == port))
    if len(fwd) != len(answered) or len(rev) != len(answered):
        return None
    send, echo, recv = (answered[c].to_numpy(np.int64) for c in ("send_ns", "echo_ns", "recv_ns"))
    late = np.concatenate([fwd.actual - fwd.due, rev.actual - rev.due])
    return {
        "probes": len(answered),
        "stack_to_engine_us": float(np.median(fwd.arrival.to_numpy() - send)) / 1e3,
        "handover_lateness_us": float(np.median(late)) / 1e3,
        "handover_to_read_us": float(np.median(echo - fwd.actual.to_numpy())) / 1e3,
        "handover_to_read_reverse_us": float(np.median(recv - rev.actual.to_numpy())) / 1e3,
    }
