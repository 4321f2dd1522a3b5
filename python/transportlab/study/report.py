"""The study report: one HTML page per study and design — the figures and tables its
`study.toml` lists, in the study's order and of the study's kind, each captioned with the
set-up, the repetitions and what was measured, every run behind it one link away — and
`tables.md` beside it (each figure's numbers as mean ± 95 % interval (n)).

Built from the catalogue rows of the done runs (`artefacts.catalogue`, via `sweep_table`
and `probe_table`) and each run's own plots; nothing is measured here."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from html import escape
from pathlib import Path

import numpy as np
import pandas as pd

from transportlab.artefacts.catalogue import AXIS
from transportlab.artefacts.metric_registry import BY_NAME
from transportlab.report.html import UNTRUSTED_BECAUSE, cell, img_tag, page, run_validity, table
from transportlab.report.rundata import RunData
from transportlab.report.style import Colors, figure, legend_below, save
from transportlab.report.table import probe_table, sweep_table
from transportlab.scenario.load import read_toml
from transportlab.study.agreement import agreement_section
from transportlab.study.run import ExperimentPlan, StudyOutcome
from transportlab.study.spec import Figure

# Student's t 0.975 quantiles for 1…30 degrees of freedom (the 95 % interval of a mean).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip
# Most time-series images one figure shows (one per point; the rest are a link away).
MAX_SERIES = 16

# How a value of each registry format is shown in a study's tables and axes: (scale, unit).
DISPLAY = {"rate": (1e-6, "Mbit/s"), "pct": (100.0, "%"), "bytes": (1e-6, "MB"), "s": (1.0, "s"), "ms": (1.0, "ms")}
# Catalogue columns outside the metric registry (the analysis window's, distributions').
OTHER_LABELS: dict[str, tuple[str, float, str]] = {
    "window_bytes": ("bytes in the window", 1e-6, "MB"),
    "window_byte_difference": ("|D1 − D2|", 1e-6, "MB"),
    "window_utilisation": ("utilisation", 100.0, "%"),
    "convergence_s": ("convergence", 1.0, "s"),
}


def ci95(values) -> tuple[float, float, int]:
    """(mean, half-width of the 95 % interval, n); the half-width is NaN below 2 values."""
    v = pd.to_numeric(pd.Series(values), errors="coerce").dropna().to_numpy(np.float64)
    n = len(v)
    if n == 0:
        return math.nan, math.nan, 0
    if n == 1:
        return float(v[0]), math.nan, 1
    t = _T975[n - 2] if n - 1 <= len(_T975) else 1.96
    return float(v.mean()), float(t * v.std(ddof=1) / math.sqrt(n)), n


def _fmt(x: float) -> str:
    if math.isnan(x):
        return "—"
    a = abs(x)
    return f"{x:.0f}" if a >= 1000 else f"{x:.1f}" if a >= 100 else f"{x:.2f}" if a >= 1 else f"{x:.3g}"


def fmt_ci(values, scale: float = 1.0) -> str:
    m, h, n = ci95(values)
    if n == 0:
        return "—"
    return f"{_fmt(m * scale)} (n=1)" if n == 1 else f"{_fmt(m * scale)} ± {_fmt(h * scale)} (n={n})"


def label_of(metric: str, fig: Figure | None = None) -> tuple[str, float, str]:
    """(label, scale, unit) of a catalogue column: the metric registry's label shown in
    the study's units; a figure's own `unit` (and `scale`) wins for its first metric."""
    if metric in OTHER_LABELS:
        label, scale, unit = OTHER_LABELS[metric]
    elif metric in BY_NAME:
        m = BY_NAME[metric]
        scale, unit = DISPLAY.get(m.format, (1.0, m.unit))
        label = m.label
    else:  # a distribution statistic (`rtt_p50_ms`) or a probe's column
        label, scale, unit = metric.removesuffix("_ms").replace("_", " "), 1.0, "ms" if metric.endswith("_ms") else ""
    if fig is not None and fig.unit:
        scale, unit = fig.scale, fig.unit
    return label, scale, unit


# ---- data -------------------------------------------------------------------------------


def study_rows(plans: Sequence[ExperimentPlan]) -> tuple[pd.DataFrame, dict[str, bool], dict[str, RunData]]:
    """Catalogue rows (flows and probes) of every done run, with `experiment` and
    `trusted` columns; run_dir → trusted; and run_dir → its loaded run."""
    frames, trusted, loaded = [], {}, {}
    for p in plans:
        rds = [RunData.load(r.run_dir) for r in p.done]
        if not rds:
            continue
        for rd in rds:
            trusted[str(rd.dir)] = run_validity(rd).trusted
            loaded[str(rd.dir)] = rd
        flows = sweep_table(rds)
        probes = probe_table(rds).rename(columns={"probe": "flow"})
        for df in (flows, probes):
            if len(df):
                frames.append(df.assign(experiment=p.experiment.name))
    if not frames:
        return pd.DataFrame(columns=["experiment", "run_dir", "point", "flow", "trusted"]), trusted, loaded
    rows = pd.concat(frames, ignore_index=True)
    rows["trusted"] = rows["run_dir"].map(lambda d: trusted.get(str(d), False))
    return rows, trusted, loaded


def _column(rows: pd.DataFrame, name: str, axis_first: bool = True) -> str:
    """The catalogue column a figure field names: a sweep axis (`axis:<name>`) or a
    column of that name; `by` prefers the column (a flow's `cc`, not the swept pair)."""
    if not axis_first and name in rows:
        return name
    return AXIS + name if AXIS + name in rows else name


def figure_rows(rows: pd.DataFrame, fig: Figure) -> pd.DataFrame:
    d = rows[rows["experiment"].isin(fig.experiments)] if len(rows) else rows
    for col, value in fig.where.items():
        c = _column(d, col)
        d = d[d[c].astype(str) == value] if c in d else d.iloc[0:0]
    return d


def x_order(plans: Sequence[ExperimentPlan], fig: Figure) -> list[str]:
    """The x axis' steps in the order the files sweep them."""
    out: list[str] = []
    for p in plans:
        if p.experiment.name in fig.experiments:
            for r in p.runs:
                step = r.point_axes.get(fig.x or "", r.point_label or "default")
                if step not in out:
                    out.append(step)
    return out


def _groups(d: pd.DataFrame, fig: Figure) -> list[tuple[str, pd.DataFrame]]:
    cols = [_column(d, b, False) for b in fig.by if _column(d, b, False) in d]
    if not cols:
        return [("", d)]
    keys = pd.Series([", ".join(map(_text, r)) for r in d[cols].itertuples(index=False)], index=d.index, dtype=object)
    return [(k, d[keys == k]) for k in dict.fromkeys(keys)]


def _text(v) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)


def _x_values(d: pd.DataFrame, fig: Figure) -> pd.Series:
    c = _column(d, fig.x) if fig.x else None
    if c and c in d:
        return d[c].astype(str)
    return d["point"].astype(str).replace("", "default")


def summary(d: pd.DataFrame, fig: Figure, steps: list[str]) -> pd.DataFrame:
    """The numbers behind a lines / box / table figure: rows = x steps (or points) ×
    groups, one column per metric, cells mean ± 95 % interval (n)."""
    metrics = [m for m in fig.metrics if m in d]
    out = []
    xs = _x_values(d, fig) if len(d) else pd.Series(dtype=str)
    for step in steps:
        for group, g in _groups(d[xs == step], fig):
            if g.empty:
                continue
            row = {fig.x or "point": step}
            if fig.by:
                row[" / ".join(fig.by)] = group
            for m in metrics:
                label, scale, unit = label_of(m, fig if m == fig.metrics[0] else None)
                vals = g.drop_duplicates("run_dir")[m] if m in RUN_WIDE else g[m]
                row[f"{label} ({unit})" if unit else label] = fmt_ci(vals, scale)
            runs = g.drop_duplicates("run_dir")
            row["runs not trusted"] = f"{int((~runs['trusted'].astype(bool)).sum())} of {len(runs)}"
            out.append(row)
    return pd.DataFrame(out)


# Columns with one value per run (repeated on each of its flow rows).
RUN_WIDE = {"jain_index", "window_byte_difference", "window_utilisation", "convergence_s", "unintended_drops"}


# ---- drawing ----------------------------------------------------------------------------


def _values(g: pd.DataFrame, metric: str) -> pd.Series:
    return (g.drop_duplicates("run_dir") if metric in RUN_WIDE else g)[metric]


def _has_values(d: pd.DataFrame, metric: str) -> bool:
    return metric in d and not d[metric].isna().all()


def _colored_groups(d: pd.DataFrame, fig: Figure) -> tuple[list[tuple[str, pd.DataFrame]], Colors]:
    groups = _groups(d, fig)
    return groups, Colors([g for g, _ in groups])


def _step_axes(ax, fig: Figure, steps: list[str]) -> None:
    """The sweep points along x, the metric (label and unit) on y, the figure's title."""
    label, _, unit = label_of(fig.metrics[0], fig)
    ax.set_xticks(range(len(steps)))
    ax.set_xticklabels(steps, rotation=30 if len(steps) > 6 else 0, ha="right" if len(steps) > 6 else "center")
    ax.set_xlim(-0.5, len(steps) - 0.5)
    ax.set_xlabel(fig.x or "sweep point")
    ax.set_ylabel(f"{label} ({unit})" if unit else label)
    ax.set_title(fig.title)


def draw_lines(d: pd.DataFrame, fig: Figure, steps: list[str], out: Path) -> Path:
    """The metric's mean and 95 % interval at each sweep point, a line per group."""
    metric = fig.metrics[0]
    scale = label_of(metric, fig)[1]
    groups, colors = _colored_groups(d, fig)
    f, ax = figure()
    xs_all = _x_values(d, fig)
    n = len(groups)
    for i, (group, g) in enumerate(groups):
        xs = xs_all.loc[g.index]
        pts = []
        for j, step in enumerate(steps):
            m, h, k = ci95(_values(g[xs == step], metric))
            if k:
                pts.append(
                    (j + (i - (n - 1) / 2) * min(0.12, 0.5 / max(n, 1)), m * scale, 0.0 if math.isnan(h) else h * scale)
                )
        if pts:
            x, y, e = map(np.array, zip(*pts))
            ax.errorbar(x, y, yerr=e, marker="o", ms=4, capsize=3, lw=1.3, color=colors[group], label=group or metric)
    _step_axes(ax, fig, steps)
    ax.set_ylim(bottom=min(0.0, ax.get_ylim()[0]))
    if n > 1 or fig.by:
        legend_below(ax)
    return save(f, out)


def draw_box(d: pd.DataFrame, fig: Figure, steps: list[str], out: Path) -> Path:
    """The metric's distribution at each sweep point, a box per group."""
    metric = fig.metrics[0]
    scale = label_of(metric, fig)[1]
    groups, colors = _colored_groups(d, fig)
    f, ax = figure(figsize=(max(9.0, 0.5 * len(steps) * len(groups) + 3), 4.2))
    xs_all = _x_values(d, fig)
    n = len(groups)
    width = 0.8 / n
    for i, (group, g) in enumerate(groups):
        xs = xs_all.loc[g.index]
        data, pos = [], []
        for j, step in enumerate(steps):
            v = pd.to_numeric(_values(g[xs == step], metric), errors="coerce").dropna().to_numpy() * scale
            if len(v):
                data.append(v)
                pos.append(j + (i - (n - 1) / 2) * width)
        if data:
            bp = ax.boxplot(data, positions=pos, widths=width * 0.85, patch_artist=True, medianprops={"color": "black"})
            for patch in bp["boxes"]:
                patch.set_facecolor(colors[group])
                patch.set_alpha(0.6)
            ax.plot([], [], "s", color=colors[group], label=group or metric)
    _step_axes(ax, fig, steps)
    if n > 1:
        legend_below(ax)
    return save(f, out)


# ---- page -------------------------------------------------------------------------------


def _rel(path: Path, base: Path) -> str:
    return escape(os.path.relpath(path, base))


def _html_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "<p>No rows.</p>"
    rows = [[cell(str(v), isinstance(v, (int, float))) for v in r] for r in df.itertuples(index=False)]
    return table([str(c) for c in df.columns], rows)


def _setup(p: ExperimentPlan, study_folder: Path) -> str:
    desc = str(read_toml(study_folder / p.experiment.file).get("description", ""))
    return f"{p.experiment.title}" + (f" ({desc})" if desc else "")


def _repetitions(d: pd.DataFrame, plans: list[ExperimentPlan]) -> str:
    per_point = d.drop_duplicates("run_dir").groupby(["experiment", "point"]).size() if len(d) else pd.Series()
    planned = sorted({r.repetition for p in plans for r in p.runs})
    want = (max(planned) + 1) if planned else 0
    if per_point.empty:
        return f"none yet of {want} planned per point"
    lo, hi = int(per_point.min()), int(per_point.max())
    return f"{lo} per point" if lo == hi else f"{lo}–{hi} per point"


def _caption(fig: Figure, d: pd.DataFrame, plans: list[ExperimentPlan], design: str, folder: Path) -> str:
    planned = sum(len(p.runs) for p in plans)
    done = sum(len(p.done) for p in plans)
    runs = d.drop_duplicates("run_dir") if len(d) else d
    untrusted = int((~runs["trusted"].astype(bool)).sum()) if len(runs) else 0
    setup = "; ".join(_setup(p, folder) for p in plans)
    thin = {p.experiment.name: p.design for p in plans}
    dens = ", ".join(f"{n}: every {x.thin}th step" for n, x in thin.items() if x.thin > 1) or "every sweep step"
    trust = f" {untrusted} of them not trusted ({UNTRUSTED_BECAUSE}) — marked ✗ below." if untrusted else ""
    return (
        f"<b>{escape(fig.title)}.</b> {escape(fig.measured)} <i>Set-up:</i> {escape(setup)}. "
        f"<i>Repetitions:</i> {escape(_repetitions(d, plans))} (design {escape(design)}, {escape(dens)}); "
        f"{done} of {planned} runs done.{escape(trust)}"
    )


def _runs_list(plans: list[ExperimentPlan], trusted: dict[str, bool], base: Path) -> str:
    items = []
    for p in plans:
        for r in p.runs:
            rep = r.run_dir / "report.html"
            name = f"{p.experiment.name} · {r.label}"
            if rep.is_file():
                mark = "✓" if trusted.get(str(r.run_dir), False) else "✗"
                items.append(f'<li>{mark} <a href="{_rel(rep, base)}">{escape(name)}</a></li>')
            else:
                items.append(f"<li>· {escape(name)} — not run yet</li>")
    return f"<details><summary>the {len(items)} runs behind it</summary><ul>{''.join(items)}</ul></details>"


def _series(fig: Figure, plans: list[ExperimentPlan], base: Path) -> str:
    parts, shown = [], 0
    for p in plans:
        seen: set[str] = set()
        for r in p.done:
            if r.point_label in seen or shown >= MAX_SERIES:
                continue
            img = r.run_dir / "plots" / f"{fig.plot}.png"
            if not img.is_file():
                continue
            seen.add(r.point_label)
            shown += 1
            rep = r.run_dir / "report.html"
            parts.append(
                f'<figure class="series">{img_tag(img, f"{p.experiment.name} {r.label}")}<figcaption>'
                f'{escape(p.experiment.name)} · {escape(r.label)} (<a href="{_rel(rep, base)}">run report</a>)'
                "</figcaption></figure>"
            )
    return "".join(parts)


def _query(fig: Figure, d: pd.DataFrame) -> tuple[pd.DataFrame | None, str | None]:
    import duckdb

    if d.empty:
        return None, None
    con = duckdb.connect()
    con.register("runs", d)
    try:
        return con.execute(fig.sql or "").df(), None
    except duckdb.Error as e:
        return None, f"the figure's query failed: {e}"


def render_figure(
    fig: Figure, number: int, rows: pd.DataFrame, plans: list[ExperimentPlan], trusted: dict[str, bool],
    out: StudyOutcome,
) -> tuple[str, pd.DataFrame | None]:  # fmt: skip
    """The figure's HTML and its numbers (for tables.md)."""
    mine = [p for p in plans if p.experiment.name in fig.experiments]
    d = figure_rows(rows, fig)
    head = f'<section class="figure" id="{escape(fig.id)}"><h3>Figure {number}: {escape(fig.title)}</h3>'
    caption = f'<p class="caption">{_caption(fig, d, mine, out.design, out.study.folder)}</p>'
    not_run = [f"{p.experiment.name}: {p.not_run}" for p in mine if p.not_run]
    note = "".join(f'<div class="banner warn">{escape(n)}</div>' for n in not_run)
    steps = x_order(mine, fig)
    numbers: pd.DataFrame | None = None
    body = ""
    if d.empty and fig.kind != "timeseries":
        body = '<div class="banner warn">Not yet run: no run of this figure is done.</div>'
    elif fig.kind in ("lines", "box"):
        draw = draw_lines if fig.kind == "lines" else draw_box
        png = draw(d, fig, steps, out.dir / "plots" / f"{fig.id}.png") if _has_values(d, fig.metrics[0]) else None
        numbers = summary(d, fig, steps)
        body = (img_tag(png, fig.title) if png else "<p>No run has a value for this metric.</p>") + (
            f"<details><summary>the numbers (mean ± 95 % interval)</summary>{_html_table(numbers)}</details>"
        )
    elif fig.kind == "table":
        numbers = summary(d, fig, steps)
        body = _html_table(numbers)
    elif fig.kind == "timeseries":
        body = (
            _series(fig, mine, out.dir) or '<div class="banner warn">Not yet run: no run of this figure is done.</div>'
        )
    else:
        numbers, problem = _query(fig, d)
        body = (
            f'<div class="banner bad">{escape(problem)}</div>'
            if problem
            else _html_table(numbers if numbers is not None else pd.DataFrame())
        )
    return head + note + body + caption + _runs_list(mine, trusted, out.dir) + "</section>", numbers


def _experiments_section(out: StudyOutcome, trusted: dict[str, bool]) -> str:
    rows = []
    for p in out.plans:
        sweep = p.sweep_dir / "report.html"
        link = f'<a href="{_rel(sweep, out.dir)}">sweep report</a>' if sweep.is_file() else "—"
        if len(p.runs) == 1 and (p.runs[0].run_dir / "report.html").is_file():
            link = f'<a href="{_rel(p.runs[0].run_dir / "report.html", out.dir)}">run report</a>'
        d = p.design
        done = p.done
        bad = sum(1 for r in done if not trusted.get(str(r.run_dir), False))
        rows.append([
            cell(p.experiment.name, False),
            cell(p.experiment.file, False),
            cell(p.experiment.title, False),
            cell(str(d.repetitions or "file's own"), False),
            cell("all" if d.thin == 1 else f"every {d.thin}th", False),
            cell(f"{len(done)} / {len(p.runs)}"),
            cell(str(bad)),
            cell(p.not_run or "", False),
            f"<td>{link}</td>",
        ])  # fmt: skip
    return table(
        [
            "experiment",
            "file",
            "what",
            "repetitions",
            "sweep steps",
            "done / planned",
            "not trusted",
            "not run",
            "report",
        ],
        rows,  # fmt: skip
    )


def render_study(out: StudyOutcome, *, smoke: bool = False, simulated: bool = False) -> Path:
    """Writes report.html, tables.md and plots/ into the study's folder; returns the report."""
    study = out.study
    rows, trusted, loaded = study_rows(out.plans)
    mode = "simulated (virtual time)" if simulated else "emulated"
    design = study.designs[out.design]
    sub = (
        f"design <b>{escape(out.design)}</b> (repetitions: {design.repetitions or 'each file’s own'}, "
        f"sweep steps: {'all' if design.thin == 1 else f'every {design.thin}th'}; experiments may differ, see below)"
        f" · {mode}"
        + (" · <b>smoke</b>: every experiment once, shortened to a few seconds" if smoke else "")
        + f" · on a machine with {os.cpu_count()} CPU(s) shared with other work"
    )
    try:
        agreement, agreement_md = (
            ("", []) if simulated else agreement_section(out, {d: rd for d, rd in loaded.items() if trusted[d]})
        )
    except Exception as e:  # noqa: BLE001 - the pairing must not cost the report; the page says why
        agreement, agreement_md = (
            '<h2 id="agreement">Emulated against simulated</h2>'
            f'<div class="banner bad">not drawn: {escape(type(e).__name__)}: {escape(str(e))}</div>',
            [],
        )
    nav = '<a href="#figures">Figures</a>' + (
        '<a href="#agreement">Emulated against simulated</a>' if agreement else ""
    )
    body = [
        f'<h1>{escape(study.title)}</h1><p class="sub">{sub}</p><p>{escape(study.description)}</p>',
        f'<nav>{nav}<a href="#experiments">Experiments and runs</a></nav>',
    ]
    runs = rows.drop_duplicates("run_dir") if len(rows) else rows
    bad = int((~runs["trusted"].astype(bool)).sum()) if len(runs) else 0
    if bad:
        body.append(
            f'<div class="banner warn">{bad} of {len(runs)} runs are not trusted ({UNTRUSTED_BECAUSE}); '
            "each figure says how many of its runs, and the run lists mark them ✗.</div>"
        )
    body.append('<h2 id="figures">Figures and tables, in the study’s order</h2>')
    md = [f"# {study.title}\n\nDesign: {out.design}; mode: {mode}{' (smoke)' if smoke else ''}.\n"]
    for i, fig in enumerate(study.figures, 1):
        try:
            html, numbers = render_figure(fig, i, rows, out.plans, trusted, out)
        except Exception as e:  # noqa: BLE001 - one figure must not cost the report; the page says why
            html, numbers = (
                (
                    f'<section class="figure" id="{escape(fig.id)}"><h3>Figure {i}: {escape(fig.title)}</h3>'
                    f'<div class="banner bad">not drawn: {escape(type(e).__name__)}: {escape(str(e))}</div></section>'
                ),
                None,
            )
        body.append(html)
        if numbers is not None and not numbers.empty:
            md.append(f"## Figure {i}: {fig.title}\n\n{_markdown(numbers)}\n")
    body.append(agreement)
    md += agreement_md
    body.append('<h2 id="experiments">Experiments and runs</h2>' + _experiments_section(out, trusted))
    (out.dir / "tables.md").write_text("\n".join(md), encoding="utf-8")
    path = out.dir / "report.html"
    tmp = path.with_name("report.html.tmp")
    tmp.write_text(page(f"transportlab study — {study.title}", "".join(body)), encoding="utf-8")
    tmp.replace(path)
    return path


def _markdown(df: pd.DataFrame) -> str:
    head = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(v) for v in r) + " |" for r in df.itertuples(index=False)]
    return "\n".join(lines)
