#!/usr/bin/env python3
"""S3's convergence after client2 joins, measured three ways on the same runs, to show
where the lab's 9–28 s (S3 reports under a second) comes from:

- `bottleneck 1 s`: the lab's definition (docs/metrics.md) — the first crossing of the
  two clients' delivered throughput at the bottleneck, 1 s bins;
- `bottleneck 100 ms`: the same lines in 100 ms bins;
- `sent 1 s` / `sent 100 ms`: the crossing of the two clients' *sending* rates (packets
  entering their access links, i.e. what each sender put on the wire), 1 s and 100 ms.

    python3 scripts/s3_convergence.py results/s3/s3-tcp-cubic results/s3/s3-quic ...
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from transportlab import metrics as M
from transportlab.artefacts.rundir import RunDir


def crossings(run_dir: Path) -> dict[str, float | None]:
    run = RunDir(run_dir)
    m, scen = run.metrics, run.scenario.dump()
    names = [n for n, f in m.flows.items() if f.data is not None]
    flows = {n: M.Flow(**m.flows[n].data.model_dump()) for n in names}
    records, t0 = run.records, run.t0_ns
    start = {f["name"]: f["start_s"] for f in scen["flows"]}
    join = t0 + int(max(start[n] for n in names) * 1e9)
    paths = {n: m.flows[n].path for n in names}
    bottleneck = run.direction_names.index(m.window.bottleneck) if m.window and m.window.bottleneck else None
    out: dict[str, float | None] = {}
    for label, bin_ns in (("1 s", 1_000_000_000), ("100 ms", 100_000_000)):
        rates = M.throughput_by_flow(records, bottleneck, bin_ns, origin_ns=t0, flows=flows)
        c = M.crossing_time(rates, join, names)
        out[f"bottleneck {label}"] = c / 1e9 if c is not None else None
        # Sending rate: each client's packets on the first direction of its own path.
        sent = {
            n: M.throughput_by_flow(records, paths[n][0], bin_ns, origin_ns=t0, flows={n: flows[n]})[n] for n in names
        }
        both = pd.DataFrame(sent).fillna(0.0)
        c = M.crossing_time(both, join, names)
        out[f"sent {label}"] = c / 1e9 if c is not None else None
    return out


def main(argv: list[str]) -> int:
    print("| run | bottleneck 1 s | bottleneck 100 ms | sent 1 s | sent 100 ms |")
    print("|---|---|---|---|---|")
    for sweep in argv:
        for d in sorted(Path(sweep).glob("*/rep-*")):
            if not (d / "DONE").exists():
                continue
            c = crossings(d)
            cells = [f"{c[k]:.1f}" if c[k] is not None else "never" for k in
                     ("bottleneck 1 s", "bottleneck 100 ms", "sent 1 s", "sent 100 ms")]  # fmt: skip
            print(f"| {Path(sweep).name}/{d.parent.name}/{d.name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
