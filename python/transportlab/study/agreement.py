"""The study report's "emulated against simulated" section: for every experiment run both
ways — the emulated study and the simulated one beside it (OUT/<study>/simulated, as
`tlab study --simulate` writes it) — the points both ran, paired by `report.agreement`
(means over each side's repetitions, every value outside its band marked). Emulated runs
that are not trusted are left out of the pairing; the section says how many."""

from __future__ import annotations

from html import escape
from pathlib import Path

import pandas as pd

from transportlab.report.agreement import BANDS, METRICS, paired, summary_lines
from transportlab.report.compare import Source, compare_rows, compare_table, find_runs
from transportlab.report.html import cell, metric_format, table
from transportlab.report.rundata import RunData
from transportlab.study.run import ExperimentPlan, StudyOutcome


def _both_ran(pairs: pd.DataFrame) -> pd.DataFrame:
    """The rows with at least one metric measured on both sides."""
    keep = [any(r.get(f"{m.name}_agrees") is not None for m in METRICS) for _, r in pairs.iterrows()]
    return pairs[keep].reset_index(drop=True)


def experiment_pairs(p: ExperimentPlan, simulated_dir: Path, trusted: dict[str, RunData]) -> tuple[pd.DataFrame, int]:
    """The paired rows of one experiment's points run both ways (`trusted`: the emulated
    runs already loaded and trusted, by folder), and how many emulated runs were left out
    as not trusted; an empty frame when one side has no run."""
    emulated = [trusted[str(r.run_dir)] for r in p.done if str(r.run_dir) in trusted]
    untrusted = len(p.done) - len(emulated)
    simulated = find_runs(simulated_dir) if simulated_dir.is_dir() else []
    if not emulated or not simulated:
        return pd.DataFrame(), untrusted
    sources = [
        Source(p.sweep_dir, "emulated", emulated),
        Source(simulated_dir, "simulated", [RunData.load(d) for d in simulated]),
    ]
    pairs = paired(compare_table(compare_rows(sources)), "emulated", "simulated")
    return _both_ran(pairs), untrusted


def long_table_html(pairs: pd.DataFrame) -> str:
    """The pairs a row per point, flow and metric measured both ways (narrow, however many
    metrics): emulated, simulated, their ratio and whether it is within the band."""
    rows = []
    for _, r in pairs.iterrows():
        for m in METRICS:
            agrees = r[f"{m.name}_agrees"]
            if agrees is None:
                continue
            f = metric_format(m.name)
            rows.append([
                cell(str(r["point"] or "default"), False), cell(str(r["flow"]), False), cell(m.label, False),
                cell(f(r[f"{m.name}_emulated"])), cell(f(r[f"{m.name}_simulated"])),
                cell(f"{r[f'{m.name}_ratio']:.3g}"),
                cell("yes" if agrees else f"✗ outside {BANDS[m.name].describe(m.unit)}", False),
            ])  # fmt: skip
    return table(["point", "flow", "metric", "emulated", "simulated", "sim / emu", "within band"], rows)


def agreement_section(out: StudyOutcome, trusted: dict[str, RunData]) -> tuple[str, list[str]]:
    """The HTML section and its tables.md lines (`trusted`: the study's trusted emulated
    runs, loaded, by folder); empty when no experiment ran both ways."""
    html, md = [], []
    for p in out.plans:
        pairs, untrusted = experiment_pairs(p, out.dir / "simulated" / p.sweep_dir.name, trusted)
        if pairs.empty:
            continue
        left_out = f" {untrusted} emulated run(s) not trusted are left out." if untrusted else ""
        lines = "\n".join(summary_lines(pairs))
        html.append(
            f"<h3>{escape(p.experiment.name)}: {escape(p.experiment.title)}</h3>"
            f'<p class="small">{len(pairs)} point × flow rows run both ways.{escape(left_out)}</p>'
            f'<pre style="white-space: pre-wrap">{escape(lines)}</pre><details>'
            f"<summary>every value</summary>{long_table_html(pairs)}</details>"
        )
        md.append(f"## Emulated against simulated: {p.experiment.name}\n\n```\n{lines}\n```\n{left_out.strip()}\n")
    if not html:
        return "", []
    head = (
        '<h2 id="agreement">Emulated against simulated</h2><p>Each experiment the simulated study beside this one '
        "also ran, at the points both ran: means over each side's repetitions, how many values agree within "
        "their band, each one outside it, and every value with its ratio.</p>"
    )
    return head + "".join(html), md
