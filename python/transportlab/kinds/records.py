"""Paced records (`size` bytes every `interval`), as tcp, quic and udp flows send them:
the size check, the client's arguments, and the record metrics from the client's
per-record series (docs/agent.md "Records", docs/metrics.md)."""

from __future__ import annotations

from typing import Any

from transportlab import metrics as M
from transportlab.kinds.base import Files, duration_arg
from transportlab.kinds.workloads import workload_metrics
from transportlab.scenario.errors import FieldIssue

# A record's bytes in the stream, framing included: a 16-byte header framed (19) to 16 MiB.
RECORD_RANGE = (19, 16 * 2**20)


def check_record_size(spec, protocol: str) -> None:
    """A records flow's `size` and `interval` (tcp and quic alike)."""
    for k in ("size", "interval"):
        if getattr(spec, k) is None:
            raise FieldIssue(f"{protocol} records need size and interval ({k} is missing)", (k,))
    if not RECORD_RANGE[0] <= spec.size <= RECORD_RANGE[1]:
        raise FieldIssue(
            f"a {protocol} record is {RECORD_RANGE[0]} bytes (its 16-byte header, framed) to 16 MiB",
            ("size",),
            spec.size,
        )


def records_series(files: Files):
    """The client's per-record series beside its TCP_INFO series."""
    return files.client_series.with_name(files.client_series.stem + "-records.arrow")


def records_argv(flow, files: Files) -> list[str]:
    """The client's arguments for paced records (tcp's and quic's alike)."""
    return [
        "--record-size",
        str(flow.size),
        "--record-interval",
        duration_arg(flow.interval),
        "--duration",
        duration_arg(flow.end - flow.start),
        "--delivery",
        flow.delivery,
        "--record-series",
        str(records_series(files)),
    ]


def records_flow_metrics(run, flow, client: dict, sender: dict, *, min_rtt_us: float | None = None) -> dict[str, Any]:
    """A records flow's workload metrics and record metrics (tcp's and quic's alike: the
    client's records series, the sender's records_sent)."""
    sent = (sender.get("records") or {}).get("records_sent")
    out = workload_metrics(run, flow, run.series(f"{flow['name']}-client-records"), sent)
    out.update(records_metrics(run, flow["name"], client, sender, min_rtt_us=min_rtt_us))
    return out


def records_metrics(
    run,
    name: str,
    client: dict,
    sender: dict,
    *,
    sent: int | None = None,
    min_rtt_us: float | None = None,
    series_stem: str | None = None,
) -> dict[str, Any]:
    """Per-record latency and the share of records late by one RTT or more (docs/metrics.md),
    for every transport's records (tcp, quic, udp: one series layout). The RTT is the
    sending connection's minimum RTT as its stack measured it (tcp_info.min_rtt_us,
    quinn's min_rtt): the path's round trip without queueing; udp gives its own
    `min_rtt_us` (it measures none). `sent` defaults to the sender's records_sent."""
    received = client.get("records") or {}
    if sent is None:
        sent = (sender.get("records") or {}).get("records_sent")
    series = run.series(series_stem or f"{name}-client-records")
    lat = M.record_latencies(series) if series is not None else None
    if min_rtt_us is None:
        min_rtt_us = (sender.get("tcp_info") or {}).get("min_rtt_us")
    rtt_ns = min_rtt_us * 1e3 if min_rtt_us else None
    stats = None
    if lat is not None and len(lat):
        s = M.summarize(lat / 1e6)
        stats = {k: s[k] for k in ("mean", "p50", "p95", "p99")}
    return {
        "records_sent": sent,
        "records_delivered": int(len(lat)) if lat is not None else None,
        "records_malformed": received.get("malformed"),
        "records_via_packet": received.get("via_packet"),
        "record_latency_ms": stats,
        "records_late_share": M.late_share(lat, sent, rtt_ns) if lat is not None and sent and rtt_ns else None,
        "records_rtt_ms": rtt_ns / 1e6 if rtt_ns else None,
    }
