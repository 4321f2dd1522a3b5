"""The head-of-line table of a `scenarios/s2/hol.toml` run (docs/results-hol.md): per arm,
records sent and delivered, median and p99 record latency, the share late by ≥ 1 RTT
(`metrics.json`), and how many records were already late when their bytes left the
server host (waiting in its send buffer for the congestion window) and when they reached
the client host (that, or waiting for the retransmission of their own bytes), which no
receiver can undo. The unordered arm's client also assembled the records from the socket's
stream alone (`stream_ns`): the last columns are what an ordered receiver would have got
from the same packets in the same run. The sender's side of it: its congestion window
(10th, 50th, 90th percentile of the server's TCP_INFO samples while established) and the
share of those samples in which it held bytes it had not sent (`notsent_bytes` > 0).

Both come from the engine's packet log: arrivals of the flow's data packets on the first
link direction of its path (the server host handed them over) and departures on its last
(handed over to the client host), sequence numbers
mapped to stream offsets with the server's ISN (its SYN-ACK, the first packet of the
flow), each packet's payload the log's `payload_len` (the engine read it from the TCP
header). A record has arrived when every byte of its frame has.

    tlab table hol RESULTS/s2-hol
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from transportlab import metrics as M
from transportlab.artefacts.packetlog import ARRIVAL, DEPARTURE, actual_time, read_records
from transportlab.artefacts.rundir import RunDir, RunDirError
from transportlab.report.tables.common import TableError, arm, flows, markdown, run_dirs


def completions(raw: Path, flow: dict, record_size: int, count: int, event: int, direction: int) -> np.ndarray:
    """Time (ns) of the `event` (arrival, departure) on link `direction` that completed
    each record (the first copy of its last missing byte), NaN if none did."""
    log = read_records(raw / "packets.tlog")
    d = flow["data"]
    mask = (log["src"] == d["src"]) & (log["dst"] == d["dst"]) & (log["sport"] == d["sport"])
    mask &= log["dport"] == d["dport"]
    pk = log[mask]
    isn = int(pk["tcp_seq"][np.argmin(pk["t_ns"])])
    dep = pk[(pk["event"] == event) & (pk["direction"] == direction)]
    dep = dep[np.argsort(actual_time(dep), kind="stable")]
    have = np.zeros(record_size * count, dtype=bool)
    missing = np.full(count, record_size, dtype=np.int64)
    arrived = np.full(count, np.nan)
    for t, seq, payload in zip(actual_time(dep), dep["tcp_seq"], dep["payload_len"].astype(np.int64)):
        if payload <= 0:
            continue
        start = (int(seq) - isn - 1) % 2**32
        end = min(start + payload, len(have))
        if start >= end:
            continue
        new = ~have[start:end]
        if not new.any():
            continue
        have[start:end] = True
        idx = np.nonzero(new)[0] + start
        ids, n = np.unique(idx // record_size, return_counts=True)
        missing[ids] -= n
        done = ids[(missing[ids] == 0) & np.isnan(arrived[ids])]
        arrived[done] = t
    return arrived


TCP_ESTABLISHED = 1  # TCP_INFO's tcpi_state


def sender_window(tcp_info: pd.DataFrame) -> tuple[tuple[float, float, float], float]:
    """The sender's cwnd (segments) at the 10th, 50th and 90th percentile of its samples
    while established, and the share of those samples with unsent bytes in its buffer."""
    est = tcp_info[tcp_info["state"] == TCP_ESTABLISHED]
    if est.empty:
        nan = float("nan")
        return (nan, nan, nan), nan
    p10, p50, p90 = np.percentile(est["cwnd"].to_numpy(np.float64), [10, 50, 90])
    return (float(p10), float(p50), float(p90)), float((est["notsent_bytes"] > 0).mean())


def arm_row(run: RunDir) -> dict:
    (name, flow), *_ = flows(run).items()
    raw = run.raw
    summary = run.summary(f"{name}-client")
    if summary is None:
        raise RunDirError(f"{raw / name}-client.json: missing")
    client = summary["results"]["records"]
    series = run.series(f"{name}-client-records")
    if series is None:
        raise RunDirError(f"{raw / name}-client-records.arrow: missing")
    sent = flow["records_sent"]
    rtt_ns = flow["records_rtt_ms"] * 1e6
    size = client["record_size"]
    left = completions(raw, flow, size, sent, ARRIVAL, flow["path"][0])
    arrived = completions(raw, flow, size, sent, DEPARTURE, flow["path"][-1])
    send = np.full(sent, np.nan)
    send[series["id"].to_numpy()] = series["send_ns"].to_numpy(dtype=float)

    def late(t: np.ndarray) -> float | None:
        v = t - send
        return M.late_share(v[np.isfinite(v)], sent, rtt_ns)

    server = run.series(f"{name}-server")
    if server is None:
        raise RunDirError(f"{raw / name}-server.arrow: missing")
    cwnd, unsent = sender_window(server)
    lat = flow["record_latency_ms"]
    stream = (series["stream_ns"] - series["send_ns"]).to_numpy(dtype=float)
    stream = stream[np.isfinite(stream)]
    stream_p50, stream_p99 = np.percentile(stream / 1e6, [50, 99])
    return {
        "stream_p50_ms": float(stream_p50),
        "stream_p99_ms": float(stream_p99),
        "stream_late": M.late_share(stream, sent, rtt_ns),
        "arm": client["delivery"],
        "sent": sent,
        "delivered": flow["records_delivered"],
        "p50_ms": lat["p50"],
        "p99_ms": lat["p99"],
        "late": flow["records_late_share"],
        "left_late": late(left),
        "arrived_late": late(arrived),
        "via_packet": client["via_packet"],
        "loss": flow["loss_rate"],
        "retrans": flow["retransmissions"],
        "cwnd": cwnd,
        "unsent": unsent,
    }


def table(root: Path) -> str:
    head = ["arm", "records sent", "delivered", "median latency (ms)", "p99 latency (ms)", "late ≥ 1 RTT",
            "left the server late ≥ 1 RTT", "reached the client host late ≥ 1 RTT", "via packet tap",
            "data packets lost", "retransmissions", "same packets, stream only: median / p99 (ms), late ≥ 1 RTT",
            "sender cwnd p10 / p50 / p90 (segments)", "sender samples with unsent bytes"]  # fmt: skip
    runs = run_dirs(root)
    # The columns are TCP's (sequence numbers, TCP_INFO): the study's other arms (QUIC,
    # UDP) are named under the table instead.
    tcp = [run for run in runs if next(iter(flows(run).values()))["protocol"] == "tcp"]
    if not tcp:
        raise TableError(
            f"{root}: no run with a TCP records flow (the head-of-line table reads TCP's sequence numbers)"
        )
    rows = [arm_row(run) for run in tcp]
    others = sorted({arm(run) for run in runs if run not in tcp})
    note = [f"\nNot TCP, so not in this table: {', '.join(others)}."] if others else []
    return "\n".join(
        markdown(
            head,
            (
                [
                    f"TCP {r['arm']}",
                    str(r["sent"]),
                    str(r["delivered"]),
                    f"{r['p50_ms']:.1f}",
                    f"{r['p99_ms']:.1f}",
                    f"{r['late']:.1%}",
                    f"{r['left_late']:.1%}",
                    f"{r['arrived_late']:.1%}",
                    str(r["via_packet"]),
                    f"{r['loss']:.2%}",
                    str(r["retrans"]),
                    f"{r['stream_p50_ms']:.1f} / {r['stream_p99_ms']:.1f}, {r['stream_late']:.1%}",
                    " / ".join(f"{c:.0f}" for c in r["cwnd"]),
                    f"{r['unsent']:.0%}",
                ]
                for r in rows
            ),
        )
        + note
    )
