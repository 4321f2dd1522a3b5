"""Tables over many runs (a sweep or a study): one row per run × flow, and aggregates
over repetitions. Built only from each run's metrics.json (no raw data is read)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from transportlab.artefacts.catalogue import PAGE_STATS, PROBE_STATS, RUN_COLUMNS, flow_rows, probe_rows
from transportlab.artefacts.metric_registry import METRICS, TABLE
from transportlab.artefacts.rundir import RunDir, RunDirError
from transportlab.report.rundata import RunData

# Columns holding numbers (NaN where a run has none).
NUMERIC = (
    {m.name for m in METRICS if m.numeric}
    | {f"{m}_{k}_ms" for m in ("queueing_delay", "rtt", "record_latency", "path_delay") for k in PROBE_STATS}
    | {f"{m}_{k}_ms" for m in ("page_time", "object_ttfb") for k in PAGE_STATS}
    | {"jain_index", "unintended_drops", "sent", "received", "lost", "window_bytes"}
)


def parse_value(df: pd.DataFrame, path: str, v):
    """A swept value as (number in SI units, unit kind) as the plan recorded it (rates,
    durations, sizes, percentages and plain numbers); None if it is not numeric."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v), None
    hit = df.attrs.get("numeric", {}).get(path, {}).get(str(v))
    return tuple(hit) if hit is not None else None


def _point_order(df: pd.DataFrame, swept: list[str]) -> pd.DataFrame:
    """Rows sorted by the swept values (numerically when every value of a path parses as
    a number, rate, duration, size or percentage; else in first-seen order), then by
    repetition and in first-seen order of flows."""
    if df.empty:
        return df
    keys: dict[str, list] = {}
    for p in swept:
        parsed = [parse_value(df, p, v) for v in df[p]]
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


def swept_paths(run_dirs: Iterable[RunData]) -> list[str]:
    """The swept field paths, in first-seen order."""
    out: dict[str, None] = {}
    for rd in run_dirs:
        for p in rd.record.run.values:
            out[p] = None
    return list(out)


def _load(run_dirs) -> list[RunData]:
    return [rd if isinstance(rd, RunData) else RunData.load(rd) for rd in run_dirs]


def _scenario(rd: RunData):
    try:
        return RunDir(rd.dir).scenario
    except RunDirError:
        return None


def _table(run_dirs, rows_of, empty_columns: list[str]) -> pd.DataFrame:
    rds = _load(run_dirs)
    swept = swept_paths(rds)
    rows = [row for rd in rds for row in rows_of(rd.record, _scenario(rd), rd.dir)]
    df = pd.DataFrame(rows, columns=None if rows else RUN_COLUMNS + swept + empty_columns)
    for col in df.columns:
        if col in NUMERIC:
            df[col] = pd.to_numeric(df[col], errors="coerce").astype(float)
    df.attrs["swept"] = swept
    numeric: dict[str, dict[str, tuple[float, str | None]]] = {}
    for rd in rds:
        for path, value in rd.record.run.numeric.items():
            numeric.setdefault(path, {})[str(rd.record.run.values.get(path))] = value
    df.attrs["numeric"] = numeric
    return _point_order(df, swept)


def sweep_table(run_dirs: Iterable[Path | str | RunData]) -> pd.DataFrame:
    """One row per run × flow: `artefacts.catalogue.flow_rows` (its docstring lists the
    columns), numbers as floats (missing: NaN). `df.attrs["swept"]` lists the swept paths."""
    return _table(run_dirs, flow_rows, ["flow", "protocol", "cc", "from", "to"])


def probe_table(run_dirs: Iterable[Path | str | RunData]) -> pd.DataFrame:
    """One row per run × probe (`artefacts.catalogue.probe_rows`), the probe's name in
    `probe`."""
    return _table(run_dirs, probe_rows, ["probe"]).rename(columns={"flow": "probe"})


AGG_METRICS = [m.name for m in TABLE]


def aggregate(
    df: pd.DataFrame, metrics: list[str] | None = None, by: tuple[str, ...] = ("point", "flow")
) -> pd.DataFrame:
    """Statistics over repetitions: one row per point × flow (in first-seen order), with
    `n` (runs) and for each metric m: m_mean, m_std (sample, ddof=1; NaN for one run),
    m_min, m_median, m_max, m_count (runs with a value). Swept path columns are kept."""
    metrics = [m for m in (metrics or AGG_METRICS) if m in df]
    swept = [p for p in df.attrs.get("swept", []) if p in df]
    present = [b for b in by if b in df]
    if df.empty:
        return pd.DataFrame(columns=present + ["n"])
    keys = df[present].astype(str).agg("\x1f".join, axis=1)
    out = []
    for _, g in df.groupby(keys, sort=False):
        row = {b: g[b].iloc[0] for b in present}
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
