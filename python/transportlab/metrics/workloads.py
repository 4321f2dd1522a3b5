"""Application workloads built on the records workload (docs/metrics.md): VoIP frames and
their playout, streaming sessions' bandwidth efficiency and retransmission rate, the CPU
cost of a transfer relative to raw TCP, and bytes delivered over time.

Inputs are the receiving agent's per-record series (`id`, `size`, `send_ns`,
`deliver_ns`; ids 0, 1, 2, … in sending order) and numbers from the agents' summaries.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def _first_deliveries(series: pd.DataFrame) -> pd.DataFrame:
    """One row per distinct record id (its first delivery), in id order."""
    if not len(series):
        return series
    return series.sort_values(["id", "deliver_ns"]).drop_duplicates("id", keep="first")


def frame_latencies(series: pd.DataFrame, sent: int) -> np.ndarray:
    """Latency (ns) of frames 0 … sent−1: deliver_ns − send_ns, NaN for a frame never
    delivered. Rows with ids ≥ sent are ignored."""
    lat = np.full(max(0, sent), np.nan)
    first = _first_deliveries(series)
    if not len(first) or sent <= 0:
        return lat
    ids = first["id"].to_numpy(np.int64)
    keep = ids < sent
    d = first["deliver_ns"].to_numpy(np.int64) - first["send_ns"].to_numpy(np.int64)
    lat[ids[keep]] = d[keep].astype(np.float64)
    return lat


def playout_misses(latency_ns: np.ndarray, buffer_ns: float) -> np.ndarray:
    """Per frame: True when it misses its playout. With a fixed playout delay (jitter
    buffer) B, frame i is played at its send time + B; it misses when it was never
    delivered (NaN) or its latency exceeds B (a frame exactly on time is played)."""
    lat = np.asarray(latency_ns, dtype=np.float64)
    return ~(lat <= buffer_ns)  # NaN compares False: never delivered = missed


def loss_bursts(missed: np.ndarray) -> np.ndarray:
    """Lengths of the loss bursts: maximal runs of consecutive frames (by id) that miss
    playout, in order of occurrence."""
    m = np.asarray(missed, dtype=bool)
    if not len(m) or not m.any():
        return np.zeros(0, dtype=np.int64)
    edges = np.diff(np.concatenate(([0], m.astype(np.int8), [0])))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    return (ends - starts).astype(np.int64)


def playout_stats(latency_ns: np.ndarray, buffer_ns: float) -> dict:
    """Frames missing playout with buffer B (count and share of the frames), and the loss
    bursts: how many, the longest, and every length (for the burst CDF)."""
    missed = playout_misses(latency_ns, buffer_ns)
    bursts = loss_bursts(missed)
    n = len(missed)
    return {
        "frames": int(n),
        "missed": int(missed.sum()),
        "missed_share": float(missed.sum() / n) if n else None,
        "bursts": int(len(bursts)),
        "longest_burst": int(bursts.max()) if len(bursts) else 0,
        "burst_lengths": [int(b) for b in bursts],
    }


def frame_send_times(series: pd.DataFrame, sent: int, interval_ns: float) -> np.ndarray | None:
    """Send time (ns) of frames 0 … sent−1: frame i's deadline s0 + i·T, with s0 the
    earliest (send_ns − id·T) among delivered frames (the sender writes each frame at its
    deadline or a little after). None when no frame was delivered."""
    first = _first_deliveries(series)
    if not len(first):
        return None
    s0 = float(np.min(first["send_ns"].to_numpy(np.float64) - first["id"].to_numpy(np.float64) * interval_ns))
    return s0 + np.arange(max(0, sent), dtype=np.float64) * interval_ns


def competing_counts(t_s: np.ndarray, others: Sequence[tuple[float, float]]) -> np.ndarray:
    """For each time (s of scenario time), how many of the other flows' [start, end)
    intervals contain it."""
    t = np.asarray(t_s, dtype=np.float64)
    n = np.zeros(len(t), dtype=np.int64)
    for start, end in others:
        n += (t >= start) & (t < end)
    return n


def voip_metrics(
    series: pd.DataFrame,
    sent: int,
    buffers_ns: Sequence[float],
    *,
    groups: np.ndarray | None = None,
) -> dict:
    """VoIP frame statistics: frame latency (delivered frames, ms statistics) and, per
    jitter buffer, `playout_stats`; with `groups` (one integer per frame, e.g. the number
    of competing flows when it was sent) the same per group (`by_group`), bursts split at
    group edges."""
    from transportlab.metrics.summary import summarize

    def latency_stats(lat: np.ndarray) -> dict | None:
        ok = lat[np.isfinite(lat)]
        if not len(ok):
            return None
        s = summarize(ok / 1e6)
        return {k: s[k] for k in ("mean", "p50", "p95", "p99")}

    lat = frame_latencies(series, sent)
    out: dict = {
        "frames_sent": int(sent),
        "frames_delivered": int(np.isfinite(lat).sum()),
        "frame_latency_ms": latency_stats(lat),
        "playout": {_label(b): playout_stats(lat, b) for b in buffers_ns},
    }
    if groups is not None:
        g = np.asarray(groups)
        out["by_group"] = {
            str(int(v)): {
                "frame_latency_ms": latency_stats(lat[g == v]),
                **{_label(b): playout_stats(lat[g == v], b) for b in buffers_ns},
            }
            for v in np.unique(g)
        }
    return out


def _label(buffer_ns: float) -> str:
    return f"{buffer_ns / 1e6:g}ms"


def bandwidth_efficiency(goodput_bps: float | None, bottleneck_bps: float | None) -> float | None:
    """Goodput ÷ the bottleneck's rate; None when either is unknown or the rate is 0."""
    if goodput_bps is None or not bottleneck_bps:
        return None
    return goodput_bps / bottleneck_bps


def records_goodput_bps(series: pd.DataFrame, start_ns: int) -> float | None:
    """Bytes of the distinct records delivered (framing included) × 8 ÷ the time from the
    flow's start (`start_ns`) to the last delivery: what the application received over
    the span it received it, records handed over after the flow's stop included. 0 when
    nothing was delivered; None when the last delivery is not after the start."""
    first = _first_deliveries(series)
    if not len(first):
        return 0.0
    span_ns = int(first["deliver_ns"].max()) - int(start_ns)
    if span_ns <= 0:
        return None
    return float(first["size"].to_numpy(np.int64).sum()) * 8 / (span_ns / 1e9)


def retransmission_rate(retransmits: int | None, segments_out: int | None) -> float | None:
    """Segments retransmitted ÷ segments the sender sent (tcp: tcpi_total_retrans ÷
    tcpi_segs_out, retransmissions included in both; quic, which resends lost data in new
    packets: quinn's lost_packets ÷ sent_packets of the sending connection). None when
    either count is missing or nothing was sent (udp repairs nothing: it has none)."""
    if retransmits is None or not segments_out:
        return None
    return retransmits / segments_out


def cpu_ratio(cpu_s: float | None, raw_cpu_s: float | None) -> float | None:
    """CPU seconds of an arm (user + system of both ends) ÷ those of raw TCP bulk under
    the same conditions; None when either is missing or raw TCP used none."""
    if cpu_s is None or not raw_cpu_s:
        return None
    return cpu_s / raw_cpu_s


def delivered_over_time(series: pd.DataFrame, t0_ns: int, bin_s: float) -> pd.DataFrame:
    """Bytes handed to the application by the end of each bin [t0 + k·w, t0 + (k+1)·w):
    columns `t_s` (the bin's end, s since t0) and `bytes` (cumulative, distinct records,
    framing included)."""
    first = _first_deliveries(series)
    if not len(first):
        return pd.DataFrame({"t_s": np.zeros(0), "bytes": np.zeros(0, dtype=np.int64)})
    t = (first["deliver_ns"].to_numpy(np.int64) - t0_ns) / 1e9
    w = float(bin_s)
    k = np.floor(t / w).astype(np.int64)
    k = np.maximum(k, 0)
    per_bin = np.bincount(k, weights=first["size"].to_numpy(np.float64), minlength=int(k.max()) + 1)
    return pd.DataFrame({"t_s": (np.arange(len(per_bin)) + 1) * w, "bytes": np.cumsum(per_bin).astype(np.int64)})
