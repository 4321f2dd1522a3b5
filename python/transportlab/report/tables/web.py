"""The web table of a `scenarios/s2/web.toml` run (docs/results-web.md): one row per run,
from its `metrics.json` — pages completed, page time median / p90 / max, the objects'
time to first byte median / p90, retransmissions and drops on the path — and from the
client's per-object series each object's completion time (asked for → last byte handed
over) median / p90 / p99.

    tlab table web RESULTS/s2-web
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from transportlab.artefacts.rundir import RunDir
from transportlab.report.tables.common import arm, flows, markdown, run_dirs


def completion_ms(run: RunDir, flow: str) -> np.ndarray:
    s = run.series(f"{flow}-client-page")
    if s is None:
        return np.zeros(0)
    s = s[s["complete_ns"].notna()]
    return (s["complete_ns"].to_numpy(np.float64) - s["request_ns"].to_numpy(np.float64)) / 1e6


def table(folder: Path) -> str:
    head = ["arm", "run", "pages", "page time p50 (ms)", "p90 (ms)", "max (ms)", "object TTFB p50 (ms)",
            "p90 (ms)", "object completion p50 / p90 / p99 (ms)", "retransmissions", "random losses", "queue drops"]  # fmt: skip
    rows = []
    for run in run_dirs(folder):
        for name, f in flows(run).items():
            pt, tt = f.get("page_time_ms"), f.get("object_ttfb_ms")
            if pt is None:
                continue
            drops = f.get("drops") or {}
            row = [
                arm(run),
                run.dir.name,
                str(f["pages_completed"]),
                f"{pt['p50']:.0f}",
                f"{pt['p90']:.0f}",
                f"{pt['max']:.0f}",
                f"{tt['p50']:.0f}" if tt else "–",
                f"{tt['p90']:.0f}" if tt else "–",
                " / ".join(f"{v:.0f}" for v in np.percentile(completion_ms(run, name), [50, 90, 99])),
                str(f.get("retransmissions")),
                str(drops.get("random_loss", 0)),
                str(drops.get("queue_full", 0)),
            ]
            rows.append(row)
    return "\n".join(markdown(head, rows))
