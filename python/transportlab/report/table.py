"""Tables over many runs (a sweep or a study): one row per run × flow, and aggregates
over repetitions. Built only from each run's metrics.json (no raw data is read)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from .rundata import RunData, as_float

# Flow metric columns of `sweep_table`, in display order: (column, label, unit).
FLOW_METRICS = [
    ("throughput_bps", "throughput", "bit/s"),
    ("goodput_bps", "goodput", "bit/s"),
    ("completion_s", "completion", "s"),
    ("queueing_delay_mean_ms", "queueing delay (mean)", "ms"),
    ("rtt_mean_ms", "RTT (mean)", "ms"),
    ("loss_rate", "loss", ""),
    ("retransmissions", "retransmissions", "segments"),
    ("lost_packets", "lost packets (QUIC)", "packets"),
    ("packets_sent_by_data_sender", "packets sent (data sender)", "packets"),
    ("bytes_sent_by_data_sender", "bytes sent (data sender)", "bytes"),
]

RUN_COLUMNS = ["run_dir", "run_id", "scenario", "point", "repetition", "seed"]


def parse_value(v):
    """A swept value as a number (rates, durations, sizes, percentages parsed; plain
    numbers kept) and the kind of unit; None if not numeric."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v), None
    if isinstance(v, str):
        from ..scenario import units as U

        s = v.strip()
        for kind, fn in (("%", U.parse_percentage), ("rate", U.parse_rate), ("duration", U.parse_duration),
                         ("size", U.parse_size)):
            if kind == "%" and not s.endswith("%"):
                continue
            try:
                return float(fn(s)), kind
            except (ValueError, TypeError):
                continue
    return None


def _point_order(df: pd.DataFrame, swept: list[str]) -> pd.DataFrame:
    """Rows sorted by the swept values (numerically when every value of a path parses as
    a number, rate, duration, size or percentage; else in first-seen order), then by
    repetition and in first-seen order of flows."""
    if df.empty:
        return df
    keys = {}
    for p in swept:
        parsed = [parse_value(v) for v in df[p]]
        if all(x is not None for x in parsed) and len({x[1] for x in parsed}) == 1:
            keys[f"_k{len(keys)}"] = [x[0] for x in parsed]
        else:
            order = {v: i for i, v in enumerate(dict.fromkeys(map(str, df[p])))}
            keys[f"_k{len(keys)}"] = [order[str(v)] for v in df[p]]
    if not swept:
        order = {v: i for i, v in enumerate(dict.fromkeys(map(str, df["point"])))}
        keys["_k0"] = [order[str(v)] for v in df["point"]]
    flow_col = "flow" if "flow" in df else "probe" if "probe" in df else None
    if flow_col:
        order = {v: i for i, v in enumerate(dict.fromkeys(df[flow_col]))}
        fkey = [order[v] for v in df[flow_col]]
    else:
        fkey = [0] * len(df)
    rep = pd.to_numeric(df["repetition"], errors="coerce").fillna(0).to_numpy()
    tmp = df.assign(**keys, _rep=rep, _flow=fkey)
    tmp = tmp.sort_values(list(keys) + ["_rep", "_flow"], kind="stable")
    out = tmp.drop(columns=list(keys) + ["_rep", "_flow"]).reset_index(drop=True)
    out.attrs = dict(df.attrs)
    return out


def _get(d: dict | None, k: str):
    """A statistic from {"mean": …} or the agents' {"mean_ms": …} form."""
    d = d if isinstance(d, dict) else {}
    return d.get(k, d.get(f"{k}_ms"))


def _stats(d: dict | None, prefix: str) -> dict:
    return {f"{prefix}_{k}_ms": as_float(_get(d, k)) for k in ("mean", "p50", "p95", "p99")}


def swept_paths(run_dirs: Iterable[RunData]) -> list[str]:
    """The swept field paths, in first-seen order."""
    out: dict[str, None] = {}
    for rd in run_dirs:
        for p in (rd.run.get("values") or (rd.scenario.get("point") or {}).get("values") or {}):
            out[p] = None
    return list(out)


def _run_fields(rd: RunData, swept: list[str]) -> dict:
    r = rd.run
    values = r.get("values") or (rd.scenario.get("point") or {}).get("values") or {}
    row = {
        "run_dir": str(rd.dir),
        "run_id": r.get("run_id"),
        "scenario": r.get("scenario") or rd.scenario.get("name"),
        "point": r.get("point") if r.get("point") is not None else (rd.scenario.get("point") or {}).get("label", ""),
        "repetition": r.get("repetition", rd.scenario.get("repetition")),
        "seed": r.get("seed", rd.scenario.get("seed")),
    }
    for p in swept:
        row[p] = values.get(p)
    for axis, step in ((rd.scenario.get("point") or {}).get("axes") or {}).items():
        row[f"{AXIS}{axis}"] = step
    return row


AXIS = "axis:"  # column prefix: a sweep axis, valued by the point's step label


def _load(run_dirs) -> list[RunData]:
    return [rd if isinstance(rd, RunData) else RunData.load(rd) for rd in run_dirs]


def sweep_table(run_dirs: Iterable[Path | str | RunData]) -> pd.DataFrame:
    """One row per run × flow.

    Columns: run_dir, run_id, scenario, point (label), repetition, seed, one column per
    swept field path (the value as written in the scenario), flow, protocol, cc, from, to,
    bytes_delivered, throughput_bps, goodput_bps, completion_s,
    queueing_delay_{mean,p50,p95,p99}_ms, rtt_{mean,p50,p95,p99}_ms, loss_rate,
    retransmissions, bottleneck (direction index), then the run-level jain_index and
    unintended_drops. Missing values are NaN. `df.attrs["swept"]` lists the swept paths.
    """
    rds = _load(run_dirs)
    swept = swept_paths(rds)
    rows = []
    for rd in rds:
        base = _run_fields(rd, swept)
        for name, f in rd.flows.items():
            row = dict(base)
            row.update(
                flow=name,
                protocol=f.get("protocol"),
                cc=f.get("cc"),
                **{"from": f.get("from"), "to": f.get("to")},
                bytes_delivered=as_float(f.get("bytes_delivered")),
                throughput_bps=as_float(f.get("throughput_bps")),
                goodput_bps=as_float(f.get("goodput_bps")),
                completion_s=as_float(f.get("completion_s")),
            )
            row.update(_stats(f.get("queueing_delay_ms"), "queueing_delay"))
            row.update(_stats(f.get("rtt_ms"), "rtt"))
            row.update(
                loss_rate=as_float(f.get("loss_rate")),
                retransmissions=as_float(f.get("retransmissions")),
                lost_packets=as_float(f.get("lost_packets")),
                packets_sent_by_data_sender=as_float(f.get("packets_sent_by_data_sender")),
                bytes_sent_by_data_sender=as_float(f.get("bytes_sent_by_data_sender")),
                complete=f.get("complete"),
                window_limited=f.get("window_limited"),
                bottleneck=f.get("bottleneck"),
                jain_index=as_float(rd.metrics.get("jain_index")),
                unintended_drops=as_float(rd.metrics.get("unintended_drops")),
            )
            rows.append(row)
    cols = RUN_COLUMNS + swept + ["flow", "protocol", "cc", "from", "to"]
    df = pd.DataFrame(rows, columns=None if rows else cols)
    df.attrs["swept"] = swept
    return _point_order(df, swept)


def probe_table(run_dirs: Iterable[Path | str | RunData]) -> pd.DataFrame:
    """One row per run × probe: the run columns, swept paths, probe, sent, received,
    lost, loss_rate, rtt_{mean,std,min,max,p50,p95,p99}_ms."""
    rds = _load(run_dirs)
    swept = swept_paths(rds)
    rows = []
    for rd in rds:
        base = _run_fields(rd, swept)
        for name, p in rd.probes.items():
            sent = as_float(p.get("sent"))
            lost = as_float(p.get("lost"))
            row = dict(base, probe=name, sent=sent, received=as_float(p.get("received")), lost=lost,
                       loss_rate=lost / sent if sent else np.nan)
            rtt = p.get("rtt_ms") or {}
            for k in ("mean", "std", "min", "max", "p50", "p95", "p99"):
                row[f"rtt_{k}_ms"] = as_float(_get(rtt, k))
            rows.append(row)
    df = pd.DataFrame(rows)
    df.attrs["swept"] = swept
    return _point_order(df, swept) if rows else df


AGG_METRICS = [c for c, _, _ in FLOW_METRICS]


def aggregate(df: pd.DataFrame, metrics: list[str] | None = None, by: tuple[str, ...] = ("point", "flow")) -> pd.DataFrame:
    """Statistics over repetitions: one row per point × flow (in first-seen order), with
    `n` (runs) and for each metric m: m_mean, m_std (sample, ddof=1; NaN for one run),
    m_min, m_median, m_max, m_count (runs with a value). Swept path columns are kept."""
    metrics = [m for m in (metrics or AGG_METRICS) if m in df]
    swept = [p for p in df.attrs.get("swept", []) if p in df]
    by = [b for b in by if b in df]
    if df.empty:
        return pd.DataFrame(columns=list(by) + ["n"])
    keys = df[by].astype(str).agg("\x1f".join, axis=1)
    out = []
    for _, g in df.groupby(keys, sort=False):
        row = {b: g[b].iloc[0] for b in by}
        for p in swept:
            row[p] = g[p].iloc[0]
        for extra in ("protocol", "cc"):
            if extra in g:
                row[extra] = g[extra].iloc[0]
        row["n"] = len(g)
        for m in metrics:
            v = pd.to_numeric(g[m], errors="coerce").dropna().to_numpy(np.float64)
            row[f"{m}_count"] = len(v)
            row[f"{m}_mean"] = float(v.mean()) if len(v) else np.nan
            row[f"{m}_std"] = float(v.std(ddof=1)) if len(v) > 1 else np.nan
            row[f"{m}_min"] = float(v.min()) if len(v) else np.nan
            row[f"{m}_median"] = float(np.median(v)) if len(v) else np.nan
            row[f"{m}_max"] = float(v.max()) if len(v) else np.nan
        out.append(row)
    res = pd.DataFrame(out)
    res.attrs["swept"] = swept
    return res
