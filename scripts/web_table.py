#!/usr/bin/env python3
"""The web table of a `scenarios/s2/web.toml` run (docs/results-web.md): one row per run,
from its `metrics.json` — pages completed, page time median / p90 / max, the objects'
time to first byte median / p90, retransmissions and drops on the path.

    PYTHONPATH=python python3 scripts/web_table.py RESULTS/s2-web
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    head = ["arm", "run", "pages", "page time p50 (ms)", "p90 (ms)", "max (ms)", "object TTFB p50 (ms)",
            "p90 (ms)", "retransmissions", "random losses", "queue drops"]  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for m_path in sorted(Path(argv[1]).glob("*/rep-*/metrics.json")):
        for _, f in json.loads(m_path.read_text())["flows"].items():
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
                str(f.get("retransmissions")),
                str(drops.get("random_loss", 0)),
                str(drops.get("queue_full", 0)),
            ]
            print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
