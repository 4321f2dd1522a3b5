"""Sweep results laid out as the studies print them: one row per swept value, one
column per compared arm (e.g. QUIC with default buffers, QUIC with enlarged buffers,
TCP), each cell "mean (std)" over the repetitions; and fairness tables with each flow's
throughput and Jain's index. Built from `sweep_table` rows (metrics.json only)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from transportlab.artefacts.catalogue import AXIS


def axes(df: pd.DataFrame) -> list[str]:
    """The sweep's axis names, in the file's order."""
    return [c[len(AXIS) :] for c in df.columns if c.startswith(AXIS)]


def _layout(df: pd.DataFrame) -> tuple[str | None, str | None]:
    """(row axis, column axis): with two axes the one with fewer steps is the columns
    (the compared arms; on a tie the first axis); with one axis there are no columns."""
    names = axes(df)
    if len(names) == 1:
        return names[0], None
    if len(names) != 2:
        return None, None
    a, b = names
    na, nb = df[AXIS + a].nunique(), df[AXIS + b].nunique()
    return (a, b) if nb < na else (b, a)


def mean_std(values, scale: float = 1.0, digits: int = 2) -> str:
    v = pd.to_numeric(pd.Series(values), errors="coerce").dropna().to_numpy(np.float64) * scale
    if len(v) == 0:
        return "—"
    if len(v) == 1:
        return f"{v[0]:.{digits}f} (n=1)"
    return f"{v.mean():.{digits}f} ({v.std(ddof=1):.{digits}f})"


def _metric(g: pd.DataFrame) -> tuple[str, str]:
    """Downloads of a fixed size are compared by goodput (file bits / download time),
    everything else by throughput."""
    if "goodput_bps" in g and g["goodput_bps"].notna().any():
        return "goodput_bps", "goodput"
    return "throughput_bps", "throughput"


def study_tables(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(title, table) per flow: rows = the row axis' steps, columns = the column axis'
    steps, cells = metric in Mbit/s as mean (std) over repetitions."""
    rows_axis, cols_axis = _layout(df)
    if rows_axis is None or df.empty:
        return []
    out = []
    for flow, g in df.groupby("flow", sort=False):
        col, what = _metric(g)
        row_steps = list(dict.fromkeys(g[AXIS + rows_axis]))
        col_steps = list(dict.fromkeys(g[AXIS + cols_axis])) if cols_axis else [what]
        table = {}
        for c in col_steps:
            sub = g if cols_axis is None else g[g[AXIS + cols_axis] == c]
            table[c] = [mean_std(sub.loc[sub[AXIS + rows_axis] == r, col], 1e-6) for r in row_steps]
        t = pd.DataFrame(table, index=pd.Index(row_steps, name=rows_axis))
        out.append((f"{flow}: {what} (Mbit/s), mean (std) over repetitions", t))
    return out


def fairness_tables(df: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """With several flows per run: rows = the row axis' steps, columns = each flow's
    throughput and Jain's index, mean (std); one table per column-axis step."""
    rows_axis, cols_axis = _layout(df)
    if rows_axis is None or df.empty or df["flow"].nunique() < 2:
        return []
    out = []
    for c in list(dict.fromkeys(df[AXIS + cols_axis])) if cols_axis else [None]:
        sub = df if c is None or cols_axis is None else df[df[AXIS + cols_axis] == c]
        row_steps = list(dict.fromkeys(sub[AXIS + rows_axis]))
        table: dict[str, list[str]] = {}
        for flow, g in sub.groupby("flow", sort=False):
            table[f"{flow} (Mbit/s)"] = [
                mean_std(g.loc[g[AXIS + rows_axis] == r, "throughput_bps"], 1e-6) for r in row_steps
            ]
        runs = sub.drop_duplicates("run_dir")
        table["Jain's index"] = [mean_std(runs.loc[runs[AXIS + rows_axis] == r, "jain_index"], 1, 3) for r in row_steps]
        title = (
            "fairness" + (f" — {cols_axis} = {c}" if c is not None else "") + ": throughput per flow and Jain's index"
        )
        out.append((title, pd.DataFrame(table, index=pd.Index(row_steps, name=rows_axis))))
    return out


def markdown(tables: list[tuple[str, pd.DataFrame]]) -> str:
    """Plain-text tables to paste into notes (`tables.md` beside the sweep report)."""
    parts = []
    for title, t in tables:
        head = [t.index.name or ""] + [str(c) for c in t.columns]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join([str(i)] + [str(v) for v in row]) + " |" for i, row in zip(t.index, t.to_numpy())]
        parts.append(f"### {title}\n\n" + "\n".join(lines))
    return "\n\n".join(parts) + "\n"
