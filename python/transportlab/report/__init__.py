"""Stage 7, report: plots and HTML reports of runs and sweeps.

    render_run(run_dir)               -> <run_dir>/report.html (+ <run_dir>/plots/*.png)
    render_sweep(sweep_dir, run_dirs) -> <sweep_dir>/report.html (+ <sweep_dir>/plots/*.png)
    sweep_table(run_dirs)             -> DataFrame, one row per run × flow

Everything is read from the run directories the runner writes (metrics.json,
scenario.json, raw/…); metrics come from `transportlab.metrics`. Missing optional data
skips a plot (the report says which and why) and never raises.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from transportlab.artefacts.rundir import FAILURES, METRICS, RunDir
from transportlab.report.plots import Plot, run_plots, sweep_plots
from transportlab.report.rundata import RunData
from transportlab.report.study import fairness_tables, markdown, study_tables
from transportlab.report.table import aggregate, probe_table, sweep_table

__all__ = ["render_run", "render_sweep", "sweep_table", "probe_table", "aggregate", "RunData", "Plot"]


def _write(path: Path, text: str) -> Path:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def render_run(run_dir: str | Path) -> Path:
    """Writes <run_dir>/plots/*.png and <run_dir>/report.html; returns the report's path."""
    from transportlab.report.html import render_run_html

    rd = RunData.load(run_dir)
    plots = run_plots(rd, rd.dir / "plots")
    return _write(rd.dir / "report.html", render_run_html(rd, plots))


def render_sweep(sweep_dir: str | Path, run_dirs: Sequence[str | Path]) -> Path:
    """Writes <sweep_dir>/plots/*.png and <sweep_dir>/report.html over the given runs
    (all points × repetitions); returns the report's path."""
    from transportlab.report.html import render_sweep_html

    sweep_dir = Path(sweep_dir)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    analysed = [d for d in map(Path, run_dirs) if (d / METRICS).is_file() and not (d / "raw" / FAILURES).is_file()]
    failed = [(d, RunDir(d).failures) for d in map(Path, run_dirs) if (d / "raw" / FAILURES).is_file()]
    runs = [RunData.load(d) for d in analysed]
    df = sweep_table(runs)
    swept = df.attrs.get("swept", [])
    agg = aggregate(df)
    jain = aggregate(
        df.drop_duplicates("run_dir").assign(flow="all") if len(df) else df, metrics=["jain_index"], by=("point",)
    )
    probes = probe_table(runs)
    probes_agg = aggregate(probes, metrics=["rtt_mean_ms"], by=("point", "probe")) if len(probes) else None
    plots = sweep_plots(df, swept, sweep_dir / "plots", probes if len(probes) else None)
    tables = study_tables(df) + fairness_tables(df)
    if tables:
        _write(sweep_dir / "tables.md", markdown(tables))
    return _write(
        sweep_dir / "report.html", render_sweep_html(sweep_dir, df, agg, jain, probes_agg, runs, plots, tables, failed)
    )
