"""The catalogue of runs: one Parquet row per (run, flow) beside each run's metrics,
queried together with DuckDB (`tlab query`)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pandas as pd

FILE = "summary.parquet"


def rows(metrics: dict, run_dir: Path) -> pd.DataFrame:
    run = metrics["run"]
    base = {
        "scenario": run["scenario"], "point": run["point"], "repetition": run["repetition"], "seed": str(run["seed"]),
        "run_id": run["run_id"], "run_dir": str(run_dir), "jain_index": metrics.get("jain_index"),
        "unintended_drops": metrics.get("unintended_drops"),
    }
    window = metrics.get("window") or {}
    base.update({"window_byte_difference": window.get("byte_difference"), "window_utilisation": window.get("utilisation"),
                 "convergence_s": window.get("convergence_s")})  # fmt: skip
    for k, v in (run.get("values") or {}).items():
        base[f"sweep:{k}"] = str(v)
    out = []
    for name, f in metrics["flows"].items():
        q, rtt = f.get("queueing_delay_ms") or {}, f.get("rtt_ms") or {}
        out.append({**base, "flow": name, "protocol": f.get("protocol"), "cc": f.get("cc"),
                    "bytes_delivered": f.get("bytes_delivered"), "throughput_bps": f.get("throughput_bps"),
                    "goodput_bps": f.get("goodput_bps"), "completion_s": f.get("completion_s"),
                    "loss_rate": f.get("loss_rate"), "retransmissions": f.get("retransmissions"),
                    "queueing_delay_ms_mean": q.get("mean"), "queueing_delay_ms_p99": q.get("p99"),
                    "rtt_ms_mean": rtt.get("mean"), "rtt_ms_p99": rtt.get("p99"),
                    "lost_packets": f.get("lost_packets"), "window_bytes": (window.get("bytes") or {}).get(name)})
    for name, p in metrics["probes"].items():
        rtt = p.get("rtt_ms") or {}
        out.append({**base, "flow": name, "protocol": "probe", "rtt_ms_mean": rtt.get("mean_ms"),
                    "rtt_ms_p99": rtt.get("p99_ms"), "loss_rate": (p.get("lost") or 0) / p["sent"] if p.get("sent") else None})
    return pd.DataFrame(out)


def write(run_dir: Path) -> None:
    metrics = json.loads((run_dir / "metrics.json").read_text())
    rows(metrics, run_dir).to_parquet(run_dir / FILE, index=False)


def query(root: Path, sql: str) -> pd.DataFrame:
    """Runs `sql` with a view `runs` over every run's summary under `root`."""
    con = duckdb.connect()
    pattern = str(Path(root) / "**" / FILE)
    con.execute(f"CREATE VIEW runs AS SELECT * FROM read_parquet('{pattern}', union_by_name = true)")
    return con.execute(sql).df()
