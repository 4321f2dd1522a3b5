#!/usr/bin/env python3
"""The head-of-line table of any records sweep (`scenarios/s2/hol.toml`: TCP, QUIC and
UDP arms; docs/results-hol.md): one row per run, from its `metrics.json` only — records
sent and delivered, median and p99 record latency, the share late by ≥ 1 RTT and the RTT
it was judged by (docs/metrics.md). `scripts/hol_table.py` adds, for TCP arms, where the
lateness came from (the engine's packet log).

    PYTHONPATH=python python3 scripts/records_table.py RESULTS/s2-hol
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def rows(sweep: Path) -> list[list[str]]:
    out = []
    for m_path in sorted(sweep.glob("*/rep-*/metrics.json")):
        m = json.loads(m_path.read_text())
        for f in m["flows"].values():
            if f.get("records_sent") is None:
                continue
            lat = f.get("record_latency_ms") or {}
            share = f.get("records_late_share")
            out.append(
                [
                    m_path.parent.parent.name.split("=", 1)[-1],
                    m_path.parent.name,
                    str(f["records_sent"]),
                    str(f.get("records_delivered")),
                    f"{lat['p50']:.1f}" if lat else "–",
                    f"{lat['p99']:.1f}" if lat else "–",
                    f"{100 * share:.1f}%" if share is not None else "–",
                    f"{f['records_rtt_ms']:.1f}" if f.get("records_rtt_ms") else "–",
                ]
            )
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    head = [
        "arm",
        "run",
        "records sent",
        "delivered",
        "median latency (ms)",
        "p99 latency (ms)",
        "late ≥ 1 RTT",
        "RTT (ms)",
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows(Path(argv[1])):
        print("| " + " | ".join(r) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
