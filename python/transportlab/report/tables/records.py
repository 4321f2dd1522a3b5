"""The head-of-line table of any records sweep (`scenarios/s2/hol.toml`: TCP, QUIC and
UDP arms; docs/results-hol.md): one row per run, from its `metrics.json` only — records
sent and delivered, median and p99 record latency, the share late by ≥ 1 RTT and the RTT
it was judged by (docs/metrics.md). `tlab table hol` adds, for TCP arms, where the
lateness came from (the engine's packet log).

    tlab table records RESULTS/s2-hol
"""

from __future__ import annotations

from pathlib import Path

from transportlab.report.tables.common import arm, flows, markdown, run_dirs

HEAD = [
    "arm",
    "run",
    "records sent",
    "delivered",
    "median latency (ms)",
    "p99 latency (ms)",
    "late ≥ 1 RTT",
    "RTT (ms)",
]


def rows(sweep: Path) -> list[list[str]]:
    out = []
    for run in run_dirs(sweep):
        for f in flows(run).values():
            if f.get("records_sent") is None:
                continue
            lat = f.get("record_latency_ms") or {}
            share = f.get("records_late_share")
            out.append(
                [
                    arm(run),
                    run.dir.name,
                    str(f["records_sent"]),
                    str(f.get("records_delivered")),
                    f"{lat['p50']:.1f}" if lat else "–",
                    f"{lat['p99']:.1f}" if lat else "–",
                    f"{100 * share:.1f}%" if share is not None else "–",
                    f"{f['records_rtt_ms']:.1f}" if f.get("records_rtt_ms") else "–",
                ]
            )
    return out


def table(folder: Path) -> str:
    return "\n".join(markdown(HEAD, rows(folder)))
