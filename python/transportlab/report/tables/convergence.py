"""S3's convergence after the later flow joins (docs/results-s3.md), as `tlab table
convergence`: per run of a two-flow sweep, the time from the join to the first crossing
of the two flows' throughput lines (`metrics.crossing_time`), measured at two places:

- at the bottleneck: each flow's departures from the shared bottleneck direction
  (`metrics.json` window.bottleneck) — the lab's definition (docs/metrics.md), which
  `window.convergence_s` gives when the bin is the run's `analysis.bin`;
- sent: each flow's departures from the first direction of its own path, i.e. what its
  sender put on the wire.

Both depend on the bin width: a fine series crosses as soon as the newcomer's rate first
touches the incumbent's, a coarse one only when its average over a bin does. The width is
a parameter (default 1 s, the S3 files' `analysis.bin` and the convergence column of
docs/results-s3.md) and the table's caption names it. Bins start at the run's time 0 and
run to its last departure (not cut at the analysis window's end).

    tlab table convergence RESULTS/s3/s3-tcp-cubic RESULTS/s3/s3-quic [--bin 0.1]
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from transportlab import metrics as M
from transportlab.artefacts.rundir import RunDir
from transportlab.report.tables.common import TableError, markdown, run_dirs, run_label

DEFAULT_BIN_S = 1.0


@dataclass(frozen=True)
class TwoFlows:
    """What the crossing is computed from: the two flows (first listed = the incumbent's
    column), when the later one joined, and the log directions to measure at."""

    flows: dict[str, M.Flow]
    join_ns: int
    bottleneck: int
    first_hop: dict[str, int]


def crossings(records, t0_ns: int, two: TwoFlows, bin_ns: int) -> tuple[float | None, float | None]:
    """Seconds from the join to the first crossing at the bottleneck and of the sending
    rates (None: the lines never cross)."""
    names = list(two.flows)
    at = M.throughput_by_flow(records, two.bottleneck, bin_ns, origin_ns=t0_ns, flows=two.flows)
    sent = pd.DataFrame(
        {
            n: M.throughput_by_flow(records, two.first_hop[n], bin_ns, origin_ns=t0_ns, flows={n: f})[n]
            for n, f in two.flows.items()
        }
    ).fillna(0.0)  # a sender silent in a bin its peer used sent nothing there
    out = [M.crossing_time(rates, two.join_ns, names) for rates in (at, sent)]
    return out[0] / 1e9 if out[0] is not None else None, out[1] / 1e9 if out[1] is not None else None


def two_flows(run: RunDir) -> TwoFlows:
    """The run's two data flows, from its metrics.json and scenario.json."""
    m = run.metrics
    keys = {n: f.data for n, f in m.flows.items() if f.data is not None}
    names = list(keys)
    if len(names) != 2:
        raise TableError(f"{run.dir}: convergence needs exactly two data flows, the run has {len(names)}")
    if m.window is None or m.window.bottleneck is None:
        raise TableError(f"{run.dir / 'metrics.json'}: window.bottleneck: none (the scenario has no analysis window)")
    start = {f.name: f.start_s for f in run.scenario.flows}
    return TwoFlows(
        flows={n: M.Flow(**k.model_dump()) for n, k in keys.items()},
        join_ns=run.t0_ns + int(max(start[n] for n in names) * 1e9),
        bottleneck=run.direction_names.index(m.window.bottleneck),
        first_hop={n: m.flows[n].path[0] for n in names},
    )


def _cell(v: float | None) -> str:
    return f"{v:.1f}" if v is not None else "never"


def table(folders: list[Path], bin_s: float | None = None) -> str:
    """The caption and one row per analysed run of each sweep folder (bins of `bin_s`
    seconds, DEFAULT_BIN_S if None)."""
    bin_s = DEFAULT_BIN_S if bin_s is None else bin_s
    if not bin_s > 0:
        raise ValueError(f"--bin must be a positive number of seconds (got {bin_s})")
    bin_ns = round(bin_s * 1e9)
    rows = []
    for folder in folders:
        for run in run_dirs(Path(folder)):
            at, sent = crossings(run.records, run.t0_ns, two_flows(run), bin_ns)
            rows.append([f"{Path(folder).name}/{run_label(run)}", _cell(at), _cell(sent)])
    caption = (
        f"Convergence after the join: seconds from the later flow's start to the first crossing of the two "
        f"flows' throughput lines, in **{bin_s:g} s bins**; at the bottleneck (the lab's definition) and of "
        f"the rates each sender put on its first link; never = no crossing before the run's end."
    )
    head = ["run", f"at the bottleneck ({bin_s:g} s bins)", f"sent ({bin_s:g} s bins)"]
    return "\n".join([caption, "", *markdown(head, rows)])
