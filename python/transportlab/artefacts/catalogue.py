"""The catalogue of runs: one row per (run, flow) and per (run, probe), flattened from a
run's records here and nowhere else — the Parquet file beside each run (`tlab query`,
DuckDB over all of them) and the report's sweep tables use the same rows.

Row columns: run_dir, run_id, scenario, point, repetition, seed; one column per swept
field path (the value as written); `axis:<name>` per sweep axis (the point's step label);
flow, protocol, cc, from, to; the flow's metrics (`docs/metrics.md`) with distributions
as `<metric>_{mean,p50,p95,p99}_ms`; the run's jain_index, unintended_drops and the
analysis window's window_bytes, window_byte_difference, window_utilisation,
convergence_s. Probe rows have protocol "probe", the probe's name in `flow`, and
sent/received/lost, loss_rate and rtt_{mean,std,min,max,p50,p95,p99}_ms."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from transportlab.artefacts.metric_registry import FLOW_FIELDS
from transportlab.artefacts.records import MetricsRecord, ScenarioRecord
from transportlab.artefacts.rundir import RunDir

FILE = "summary.parquet"
AXIS = "axis:"  # column prefix: a sweep axis, valued by the point's step label
RUN_COLUMNS = ["run_dir", "run_id", "scenario", "mode", "point", "repetition", "seed"]
# Scalar flow metrics copied as they are, in display order (the metric registry's).
FLOW_SCALARS = FLOW_FIELDS
# Web pages: these statistics of page time and object time to first byte, as columns
# `page_time_<k>_ms`, `object_ttfb_<k>_ms`.
PAGE_STATS = ("p50", "p90")
# Scalars an agent reports (a number, or absent): anything else reads as None.
AGENT_SCALARS = {"jitter_rfc3550_ms"}
STATS = ("mean", "p50", "p95", "p99")
PROBE_STATS = ("mean", "std", "min", "max", "p50", "p95", "p99")


def _base(m: MetricsRecord, scenario: ScenarioRecord | None, run_dir: Path) -> dict[str, Any]:
    r = m.run
    row: dict[str, Any] = {
        "run_dir": str(run_dir),
        "run_id": r.run_id,
        "scenario": r.scenario,
        "mode": scenario.mode if scenario else "emulated",
        "point": r.point,
        "repetition": r.repetition,
        "seed": r.seed,
    }
    for path, value in r.values.items():
        row[path if path not in row else f"sweep:{path}"] = value
    for axis, step in (scenario.point.axes if scenario else {}).items():
        row[f"{AXIS}{axis}"] = step
    return row


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def flow_rows(m: MetricsRecord, scenario: ScenarioRecord | None, run_dir: Path) -> list[dict[str, Any]]:
    base = _base(m, scenario, run_dir)
    w = m.window
    base.update(
        jain_index=m.jain_index,
        unintended_drops=m.unintended_drops,
        window_byte_difference=w.byte_difference if w else None,
        window_utilisation=w.utilisation if w else None,
        convergence_s=w.convergence_s if w else None,
    )
    rows = []
    for name, f in m.flows.items():
        row = dict(base, flow=name, protocol=f.protocol, cc=f.cc, **{"from": f.from_, "to": f.to})
        row.update({k: _number(getattr(f, k)) if k in AGENT_SCALARS else getattr(f, k) for k in FLOW_SCALARS})
        for metric, stats in (
            ("queueing_delay", f.queueing_delay_ms),
            ("rtt", f.rtt_ms),
            ("record_latency", f.record_latency_ms),
            ("path_delay", f.path_delay_ms),
        ):
            for k in STATS:
                row[f"{metric}_{k}_ms"] = getattr(stats, k) if stats else None
        for metric, d in (("page_time", f.page_time_ms), ("object_ttfb", f.object_ttfb_ms)):
            for k in PAGE_STATS:
                row[f"{metric}_{k}_ms"] = d.get(k) if d else None
        row["window_bytes"] = w.bytes.get(name) if w else None
        rows.append(row)
    return rows


def probe_rows(m: MetricsRecord, scenario: ScenarioRecord | None, run_dir: Path) -> list[dict[str, Any]]:
    base = _base(m, scenario, run_dir)
    rows = []
    for name, p in m.probes.items():
        row = dict(
            base,
            flow=name,
            protocol="probe",
            sent=p.sent,
            received=p.received,
            lost=p.lost,
            loss_rate=(p.lost or 0) / p.sent if p.sent else None,
        )
        rtt = p.rtt_ms or {}
        for k in PROBE_STATS:
            # The probe agent writes {"mean_ms": …}; older runs {"mean": …}.
            row[f"rtt_{k}_ms"] = rtt.get(f"{k}_ms", rtt.get(k))
        rows.append(row)
    return rows


def write(run_dir: Path) -> None:
    run = RunDir(run_dir)
    m, s = run.metrics, run.scenario
    df = pd.DataFrame(flow_rows(m, s, run_dir) + probe_rows(m, s, run_dir))
    # Swept values are written as text so every run's file has the same column types.
    for path in m.run.values:
        col = path if path in df else f"sweep:{path}"
        df[col] = df[col].astype(str)
    df.to_parquet(run_dir / FILE, index=False)


def query(root: Path, sql: str) -> pd.DataFrame:
    """Runs `sql` with a view `runs` over every run's summary under `root`."""
    con = duckdb.connect()
    pattern = str(Path(root) / "**" / FILE)
    con.execute(f"CREATE VIEW runs AS SELECT * FROM read_parquet('{pattern}', union_by_name = true)")
    return con.execute(sql).df()
