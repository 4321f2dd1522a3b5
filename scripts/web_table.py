#!/usr/bin/env python3
"""The web table of a `scenarios/s2/web.toml` run (docs/results-web.md): one row per run,
from its `metrics.json` — pages completed, page time median / p90 / max, the objects'
time to first byte median / p90, retransmissions and drops on the path — and from the
client's per-object series each object's completion time (asked for → last byte handed
over) median / p90 / p99.

    PYTHONPATH=python python3 scripts/web_table.py RESULTS/s2-web
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from transportlab.artefacts.rundir import read_arrow


def completion_ms(run: Path, flow: str) -> np.ndarray:
    s = read_arrow(run / "raw" / f"{flow}-client-page.arrow")
    if s is None:
        return np.zeros(0)
    s = s[s["complete_ns"].notna()]
    return (s["complete_ns"].to_numpy(np.float64) - s["request_ns"].to_numpy(np.float64)) / 1e6


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    head = ["arm", "run", "pages", "page time p50 (ms)", "p90 (ms)", "max (ms)", "object TTFB p50 (ms)",
            "p90 (ms)", "object completion p50 / p90 / p99 (ms)", "retransmissions", "random losses", "queue drops"]  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for m_path in sorted(Path(argv[1]).glob("*/rep-*/metrics.json")):
        for name, f in json.loads(m_path.read_text())["flows"].items():
            pt, tt = f.get("page_time_ms"), f.get("object_ttfb_ms")
            if pt is None:
                continue
            drops = f.get("drops") or {}
            row = [
                m_path.parent.parent.name.split("=", 1)[-1],
                m_path.parent.name,
                str(f["pages_completed"]),
                f"{pt['p50']:.0f}",
                f"{pt['p90']:.0f}",
                f"{pt['max']:.0f}",
                f"{tt['p50']:.0f}" if tt else "–",
                f"{tt['p90']:.0f}" if tt else "–",
                " / ".join(f"{v:.0f}" for v in np.percentile(completion_ms(m_path.parent, name), [50, 90, 99])),
                str(f.get("retransmissions")),
                str(drops.get("random_loss", 0)),
                str(drops.get("queue_full", 0)),
            ]
            print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
