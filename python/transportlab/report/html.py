"""Self-contained HTML reports (plots embedded as base64 PNG, inline CSS, no external
resources): one per run and one per sweep."""

from __future__ import annotations

import base64
import datetime as _dt
import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

import pandas as pd

from transportlab.artefacts.catalogue import RUN_COLUMNS
from transportlab.artefacts.metric_registry import BY_NAME, TABLE
from transportlab.report.plots import Plot
from transportlab.report.rundata import RunData, as_float

CSS = """
:root { --fg:#1f2328; --muted:#656d76; --line:#d0d7de; --bg:#ffffff; --alt:#f6f8fa; --accent:#0969da;
        --bad:#cf222e; --badbg:#ffebe9; --warn:#9a6700; --warnbg:#fff8c5; --ok:#1a7f37; --okbg:#dafbe1; }
* { box-sizing: border-box; }
body { font: 14px/1.5 -apple-system, "Segoe UI", "Helvetica Neue", Arial, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0; }
main { max-width: 1360px; margin: 0 auto; padding: 24px 28px 60px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 34px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 22px 0 8px; }
.sub { color: var(--muted); margin: 0 0 14px; }
.banner { border-radius: 6px; padding: 10px 14px; margin: 12px 0; border: 1px solid; }
.banner.bad { background: var(--badbg); border-color: var(--bad); color: var(--bad); font-weight: 600; }
.banner.warn { background: var(--warnbg); border-color: #d4a72c; color: var(--warn); }
td.off { background: var(--warnbg); color: var(--warn); font-weight: 600; }
p.warn { color: var(--warn); font-weight: 600; }
.banner.ok { background: var(--okbg); border-color: #4ac26b; color: var(--ok); }
table { border-collapse: collapse; margin: 6px 0 14px; font-size: 13px; }
th, td { border: 1px solid var(--line); padding: 4px 8px; vertical-align: top; }
th { background: var(--alt); text-align: left; font-weight: 600; }
tbody tr:nth-child(even) td { background: #fbfcfd; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.na { color: var(--muted); text-align: center; }
.scroll { overflow-x: auto; }
table.wrap td.num { white-space: normal; }
td .std { display: block; color: var(--muted); font-size: 12px; }
table.validity th { width: 18em; }
table.validity caption { text-align: left; font-weight: 600; color: var(--fg); padding-bottom: 2px; }
table.kv th { width: 14em; }
nav { font-size: 13px; margin: 8px 0 0; }
nav a { color: var(--accent); text-decoration: none; margin-right: 14px; }
figure { margin: 18px 0 26px; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 4px; }
figcaption { color: var(--muted); font-size: 13px; max-width: 980px; margin-top: 4px; }
ul.skipped li { color: var(--muted); }
details { margin: 8px 0; }
summary { cursor: pointer; color: var(--accent); }
pre { background: var(--alt); border: 1px solid var(--line); border-radius: 4px; padding: 10px; overflow-x: auto;
      font-size: 12px; line-height: 1.4; }
code { font-size: 12.5px; }
.small { font-size: 12px; color: var(--muted); }
"""

NA = '<td class="na">—</td>'


# ---- value formatting -----------------------------------------------------------------


def _nan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def fmt_num(v: Any, digits: int = 3) -> str:
    if _nan(v):
        return "—"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer()):
        return f"{int(v):,}"
    v = float(v)
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:,.1f}"
    return f"{v:.{digits}g}"


def _decimal(v: Any, units: tuple[str, str, str, str]) -> float | str:
    """`v` with the decimal prefix that fits (units: giga, mega, kilo, none), 3–4 digits."""
    x = as_float(v)
    if math.isnan(x):
        return "—"
    for div, unit in zip((1e9, 1e6, 1e3), units):
        if abs(x) >= div:
            return f"{x / div:.3g} {unit}" if abs(x / div) < 100 else f"{x / div:.4g} {unit}"
    return x


def fmt_rate(bps: Any) -> str:
    v = _decimal(bps, ("Gbit/s", "Mbit/s", "kbit/s", "bit/s"))
    return v if isinstance(v, str) else f"{v:.3g} bit/s"


def fmt_bytes(b: Any) -> str:
    v = _decimal(b, ("GB", "MB", "kB", "B"))
    return v if isinstance(v, str) else f"{int(v)} B"


def fmt_s(s: Any) -> str:
    v = as_float(s)
    if math.isnan(v):
        return "—"
    if v != 0 and abs(v) < 1:
        return f"{v * 1e3:.3g} ms"
    return f"{v:.4g} s"


def fmt_ms(ms: Any) -> str:
    v = as_float(ms)
    return "—" if math.isnan(v) else f"{v:.3g} ms" if abs(v) < 1000 else f"{v:,.0f} ms"


def fmt_pct(p: Any) -> str:
    v = as_float(p)
    if math.isnan(v):
        return "—"
    return "0 %" if v == 0 else f"{v * 100:.3g} %"


def fmt_us(us: Any) -> str:
    v = as_float(us)
    return "—" if math.isnan(v) else f"{v:.3g} µs" if abs(v) < 1000 else f"{v:,.0f} µs"


def cell(text: str, num: bool = True) -> str:
    if text == "—":
        return NA
    return f'<td class="num">{escape(text)}</td>' if num else f"<td>{escape(text)}</td>"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """Rows are sequences of ready <td> cells (use `cell`)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(r) + "</tr>" for r in rows)
    return f'<div class="scroll"><table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def kv_table(items: Iterable[tuple[str, str]]) -> str:
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{v}</td></tr>" for k, v in items)
    return f'<table class="kv"><tbody>{rows}</tbody></table>'


def img_tag(path: Path, alt: str) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def plots_section(plots: list[Plot]) -> str:
    parts = []
    for p in plots:
        if p.path is None:
            continue
        parts.append(
            f'<figure id="plot-{escape(p.key)}">{img_tag(p.path, p.title)}'
            f"<figcaption><b>{escape(p.title)}.</b> {escape(p.caption)}</figcaption></figure>"
        )
    skipped = [p for p in plots if p.path is None and p.applies]
    if skipped:
        items = "".join(f"<li><b>{escape(p.title)}</b>: not drawn — {escape(p.skipped or '')}</li>" for p in skipped)
        parts.append(f'<h3>Plots not drawn</h3><ul class="skipped">{items}</ul>')
    if not parts:
        parts.append("<p>No plots.</p>")
    return "".join(parts)


def page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    )


def _now() -> str:
    return _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")


# ---- scenario ------------------------------------------------------------------------

_DIR_FORMAT = {
    "rate": fmt_rate,
    "delay": fmt_s,
    "jitter": fmt_s,
    "loss": fmt_pct,
    "duplicate": fmt_pct,
    "bytes": fmt_bytes,
    "size": lambda v: f"{int(v)} B",
    "interval": fmt_s,
}


def _fmt_param(key: str, v: Any) -> str:
    if key in _DIR_FORMAT and isinstance(v, (int, float)) and not isinstance(v, bool):
        return _DIR_FORMAT[key](v)
    if key.endswith("_s") and isinstance(v, (int, float)) and not isinstance(v, bool):
        return fmt_s(v)
    if key.endswith("_bps") and isinstance(v, (int, float)):
        return fmt_rate(v)
    if isinstance(v, dict):
        return ", ".join(f"{k} {_fmt_param(k, x)}" for k, x in v.items())
    if isinstance(v, list):
        return ", ".join(_fmt_param(key, x) for x in v)
    return str(v)


def _direction(d: Any) -> str:
    if not d:
        return '<span class="small">ideal</span>'
    return "<br>".join(f"{escape(k)} = {escape(_fmt_param(k, v))}" for k, v in d.items() if v is not None)


def _items_table(items: list[dict], first: Sequence[str]) -> str:
    """One column per key in `first` that any item has; every other key of an item in
    one "other parameters" cell, one per line (kind-specific fields vary per item)."""
    keys = [k for k in first if any(k in it for it in items)]
    rows = []
    for it in items:
        row = [f"<td>{escape(_fmt_param(k, it[k]))}</td>" if k in it and it[k] is not None else NA for k in keys]
        rest = [f"{escape(k)} = {escape(_fmt_param(k, v))}" for k, v in it.items() if k not in keys and v is not None]
        row.append(f"<td>{'<br>'.join(rest)}</td>" if rest else NA)
        rows.append(row)
    return table(keys + ["other parameters"], rows)


def scenario_section(sc: dict) -> str:
    if not sc:
        return "<p>scenario.json is missing.</p>"
    point = sc.get("point") or {}
    general = [
        ("name", escape(str(sc.get("name", "—")))),
        ("description", escape(str(sc.get("description") or "—"))),
        ("duration", escape(fmt_s(sc.get("duration_s")))),
        ("seed", escape(str(sc.get("seed", "—")))),
        ("repetition", escape(str(sc.get("repetition", "—")))),
        ("sweep point", escape(point.get("label") or "— (no sweep)")),
    ]
    for p, v in (point.get("values") or {}).items():
        general.append((f"  {p}", f"<code>{escape(str(v))}</code>"))
    hosts = sc.get("hosts") or []
    general.append(("hosts", escape(", ".join(h if isinstance(h, str) else json.dumps(h) for h in hosts)) or "—"))
    if sc.get("routers"):
        general.append(("routers", escape(", ".join(map(str, sc["routers"])))))
    out = [kv_table(general)]
    links = sc.get("links") or []
    if links:
        rows = [
            [
                f"<td><b>{escape(str(l.get('name')))}</b></td>",
                f"<td>{escape(' → '.join(map(str, l.get('between') or [])))}</td>",
                f"<td>{_direction(l.get('forward'))}</td>",
                f"<td>{_direction(l.get('reverse'))}</td>",
            ]
            for l in links
        ]
        out.append("<h3>Links</h3>" + table(["link", "between (forward →)", "forward", "reverse"], rows))
    if sc.get("flows"):
        out.append(
            "<h3>Flows</h3>"
            + _items_table(sc["flows"], ["name", "protocol", "cc", "from", "to", "direction", "start_s", "end_s"])
        )
    if sc.get("probes"):
        out.append("<h3>Probes</h3>" + _items_table(sc["probes"], ["name", "from", "to", "interval_s"]))
    out.append(
        "<details><summary>scenario.json (as run)</summary><pre>"
        + escape(json.dumps(sc, indent=2, sort_keys=False))
        + "</pre></details>"
    )
    return "".join(out)


# ---- run report ----------------------------------------------------------------------


def _pair_ms(d: Any, a: str, b: str) -> str:
    """Two statistics of a delay distribution in one cell: "mean / p99 ms"."""
    x, y = as_float(stat(d, a)), as_float(stat(d, b))
    if math.isnan(x) and math.isnan(y):
        return NA
    return cell(f"{fmt_num(x)} / {fmt_ms(y)}")


def _flows_table(rd: RunData) -> str:
    """The flows at a glance (fits a 1400-px window), then every statistic on demand."""
    if not rd.flows:
        return "<p>No flows.</p>"
    marks = any(f.get("marks") for f in rd.flows.values())
    headers = ["flow", "protocol / cc", "from → to", "complete", "throughput", "goodput", "completion"]
    headers += [
        "queueing delay mean / p99",
        "path delay mean / p99",
        "RTT mean / p99",
        "loss",
        "retrans\u00admissions",
    ]
    headers += (["ECN marks"] if marks else []) + ["bottleneck"]
    rows, details = [], []
    for name, f in rd.flows.items():
        q, r, o = f.get("queueing_delay_ms"), f.get("rtt_ms"), f.get("path_delay_ms")
        pc = "/".join(str(x) for x in (f.get("protocol"), f.get("cc")) if x)
        rows.append(
            [
                f"<td><b>{escape(name)}</b></td>",
                cell(pc or "—", False),
                cell(f"{f.get('from', '?')} → {f.get('to', '?')}", False),
                cell({True: "yes", False: "NO"}.get(c, "—") if (c := f.get("complete")) is not None else "—", False),
                cell(fmt_rate(f.get("throughput_bps"))),
                cell(fmt_rate(f.get("goodput_bps"))),
                cell(fmt_s(f.get("completion_s"))),
                _pair_ms(q, "mean", "p99"),
                _pair_ms(o, "mean", "p99"),
                _pair_ms(r, "mean", "p99"),
                cell(fmt_pct(f.get("loss_rate"))),
                cell(fmt_num(f.get("retransmissions"))),
            ]
            + ([cell(fmt_num(f.get("marks")))] if marks else [])
            + [cell(rd.direction_name(f.get("bottleneck")) if f.get("bottleneck") is not None else "—", False)]
        )
        details.append(
            [f"<td><b>{escape(name)}</b></td>", cell(fmt_bytes(f.get("bytes_delivered")))]
            + [cell(fmt_ms(stat(d, k))) for d in (q, o, r) for k in ("p50", "p95", "p99")]
            + [cell(fmt_ms(f.get("jitter_rfc3550_ms"))), cell(fmt_num(f.get("marks")))]
        )
    more = ["flow", "bytes delivered"]
    more += [f"{what} {k}" for what in ("queueing delay", "path delay", "RTT") for k in ("p50", "p95", "p99")]
    more += ["jitter (RFC 3550)", "ECN marks"]
    return (
        table(headers, rows)
        + '<p class="small">Queueing delay at the bottleneck and path delay (one-way, across the path): the engine\'s '
        "packet log (real times); RTT: the sender's smoothed RTT.</p>"
        + "<details><summary>every statistic per flow</summary>"
        + table(more, details)
        + "</details>"
    )


def stat(d: Any, k: str) -> Any:
    """A statistic from {"mean": …} or the agents' {"mean_ms": …} form."""
    if not isinstance(d, dict):
        return None
    return d.get(k, d.get(f"{k}_ms"))


def _probes_table(rd: RunData) -> str:
    if not rd.probes:
        return "<p>No probes.</p>"
    owd = any(isinstance(p.get("owd_forward_ms"), dict) for p in rd.probes.values())
    headers = ["probe", "sent", "received", "lost", "RTT mean", "std", "min", "p50", "p95", "p99", "max"]
    if owd:
        headers += ["one-way fwd mean", "fwd p99", "one-way rev mean", "rev p99"]
    rows = []
    for name, p in rd.probes.items():
        r = p.get("rtt_ms") or {}
        row = [
            f"<td><b>{escape(name)}</b></td>",
            cell(fmt_num(p.get("sent"))),
            cell(fmt_num(p.get("received"))),
            cell(fmt_num(p.get("lost"))),
        ] + [cell(fmt_ms(stat(r, k))) for k in ("mean", "std", "min", "p50", "p95", "p99", "max")]
        if owd:
            f, b = p.get("owd_forward_ms"), p.get("owd_reverse_ms")
            row += [
                cell(fmt_ms(stat(f, "mean"))),
                cell(fmt_ms(stat(f, "p99"))),
                cell(fmt_ms(stat(b, "mean"))),
                cell(fmt_ms(stat(b, "p99"))),
            ]
        rows.append(row)
    return table(headers, rows)


def _links_table(rd: RunData) -> str:
    if not rd.links:
        return "<p>No link statistics.</p>"
    headers = [
        "link direction",
        "index",
        "capacity",
        "delivered",
        "utilisation",
        "drops: queue full",
        "drops: random loss",
    ]
    rows = []
    items = sorted(rd.links.items(), key=lambda kv: (kv[1].get("index") is None, kv[1].get("index") or 0))
    for name, l in items:
        drops = l.get("drops") or {}
        rows.append(
            [
                f"<td><b>{escape(name)}</b></td>",
                cell(fmt_num(l.get("index"))),
                cell(fmt_rate(l.get("capacity_bps"))),
                cell(fmt_bytes(as_float(l.get("delivered_bits")) / 8)),
                cell(fmt_pct(l.get("utilisation"))),
                cell(fmt_num(drops.get("queue_full"))),
                cell(fmt_num(drops.get("random_loss"))),
            ]
        )
    return table(headers, rows)


def _engine_section(engine: Any) -> str:
    if not isinstance(engine, dict) or not engine:
        return "<p>No engine statistics.</p>"
    lat = (
        engine.get("handover_lateness")
        if isinstance(engine.get("handover_lateness"), dict)
        else (engine if "mean_us" in engine else None)
    )
    out = []
    if lat:
        out.append(
            "<p>Hand-over lateness: real time a packet was written to its host minus the model's due time (for a "
            "packet due at the same instant as the one before it, minus the end of that one's hand-over; the wait "
            "behind such a burst is the engine's <code>burst_wait</code>, raw/engine.json).</p>"
        )
        out.append(
            table(
                ["samples", "mean", "p50", "p99", "max"],
                [
                    [
                        cell(fmt_num(lat.get("count"))),
                        cell(fmt_us(lat.get("mean_us"))),
                        cell(fmt_us(lat.get("p50_us"))),
                        cell(fmt_us(lat.get("p99_us"))),
                        cell(fmt_us(lat.get("max_us"))),
                    ]
                ],
            )
        )
    rest = {k: v for k, v in engine.items() if k != "handover_lateness" and lat is not engine}
    if rest:
        out.append(
            "<details><summary>other engine statistics</summary><pre>"
            + escape(json.dumps(rest, indent=2))
            + "</pre></details>"
        )
    return "".join(out)


def unintended_banner(n: Any, what: str = "this run") -> str:
    v = as_float(n)
    if math.isnan(v):
        return '<div class="banner warn">Unintended drops were not reported for ' + escape(what) + ".</div>"
    if v > 0:
        return (
            f'<div class="banner bad">⚠ {int(v):,} unintended drop{"s" if v != 1 else ""} in {escape(what)} '
            "(engine-level: docs/packet-log.md): packets were lost outside the emulated network, "
            "so the measurements are not trustworthy.</div>"
        )
    return f'<div class="banner ok">0 unintended drops in {escape(what)}.</div>'


# Hand-over lateness p99 the engine aims for under load (docs/architecture.md, fidelity targets).
LATENESS_P99_TARGET_US = 50.0
# The engine's hand-over to a receiving agent's read beyond which a probe's one-way delay
# is visibly more than configured: over a plain veth pair the whole one-way trip of a
# probe takes ~50 µs on this machine kind (bench/engine, floor rows).
HANDOVER_TO_READ_TARGET_US = 50.0


# Why a run is not trusted, in one place for the run and study reports.
UNTRUSTED_BECAUSE = (
    f"the engine handed packets over late (p99 over {LATENESS_P99_TARGET_US:g} µs), packets were lost "
    "outside the emulated network, or a kernel TCP sender's window became one no socket can have (a kernel "
    "fault, docs/bpf.md)"
)


@dataclass(frozen=True)
class Validity:
    """Whether a run's numbers can be trusted: unintended drops (packets lost outside the
    emulated network), the engine's hand-over lateness p99 against its target (NaN when
    not reported, e.g. a simulated run) and kernel TCP windows no socket can have (flow →
    the first such sample); flows the hosts limited."""

    unintended_drops: float
    lateness_p99_us: float
    window_limited: list[str]
    impossible_window: dict[str, str]

    @property
    def timing_ok(self) -> bool | None:
        return None if math.isnan(self.lateness_p99_us) else self.lateness_p99_us <= LATENESS_P99_TARGET_US

    @property
    def trusted(self) -> bool:
        """No unintended drops, the engine on time (unknown lateness counts as on time: the
        simulator has no hand-over) and no impossible kernel window."""
        return self.unintended_drops == 0 and self.timing_ok is not False and not self.impossible_window


def run_validity(rd: RunData) -> Validity:
    m = rd.metrics
    engine = m.get("engine") or {}
    lat = engine.get("handover_lateness") if isinstance(engine.get("handover_lateness"), dict) else engine
    return Validity(
        as_float(m.get("unintended_drops")),
        as_float((lat or {}).get("p99_us")),
        [n for n, f in rd.flows.items() if f.get("window_limited")],
        {n: f["impossible_window"] for n, f in rd.flows.items() if f.get("impossible_window")},
    )


def validity_table(rd: RunData) -> str:
    """Whether the run is valid, before any figure: unintended drops, the engine's
    hand-over lateness against its target, and flows the hosts limited."""
    v = run_validity(rd)
    p99, drops, limited = v.lateness_p99_us, v.unintended_drops, v.window_limited

    def verdict(ok: bool | None, text: str) -> str:
        mark = {True: "✓", False: "✗", None: "?"}[ok]
        return f"{mark} {escape(text)}"

    rows = [
        (
            "unintended drops",
            verdict(None if math.isnan(drops) else drops == 0, "not reported" if math.isnan(drops) else fmt_num(drops)),
        ),
        (
            "engine hand-over lateness p99",
            verdict(
                None if math.isnan(p99) else p99 <= LATENESS_P99_TARGET_US,
                ("not reported" if math.isnan(p99) else fmt_us(p99)) + f" (target ≤ {LATENESS_P99_TARGET_US:g} µs)",
            ),
        ),
        ("window-limited flows", verdict(not limited, ", ".join(limited) or "none")),
        (
            "kernel TCP windows",
            verdict(
                not v.impossible_window,
                "; ".join(f"{n}: {w}" for n, w in v.impossible_window.items())
                + " — no socket can have it (a kernel fault)"
                if v.impossible_window
                else "none impossible",
            ),
        ),
    ]
    # What the probes saw beyond the engine: its hand-over to the receiving agent's read
    # is not in the link model, and adds to the configured delay.
    for name, p in (rd.metrics.get("probes") or {}).items():
        hops = p.get("hops_us") if isinstance(p, dict) else None
        if not hops:
            continue
        worst = max(hops["handover_to_read_us"], hops["handover_to_read_reverse_us"])
        rows.append(
            (
                f"hand-over → receiver ({name})",
                verdict(
                    worst <= HANDOVER_TO_READ_TARGET_US,
                    f"median {fmt_us(hops['handover_to_read_us'])} forward, "
                    f"{fmt_us(hops['handover_to_read_reverse_us'])} back; engine lateness "
                    f"{fmt_us(hops['handover_lateness_us'])} (target ≤ {HANDOVER_TO_READ_TARGET_US:g} µs)",
                ),
            )
        )
    items = "".join(f"<tr><th>{escape(k)}</th><td>{text}</td></tr>" for k, text in rows)
    return (
        f'<table class="kv validity"><caption class="small">Is this run valid?</caption><tbody>{items}</tbody></table>'
    )


def render_run_html(rd: RunData, plots: list[Plot]) -> str:
    m = rd.metrics
    r = rd.run
    title = f"transportlab run — {rd.name}"
    sub = " · ".join(
        x
        for x in [
            f"run id <code>{escape(str(r.get('run_id')))}</code>" if r.get("run_id") else "",
            f"seed {escape(str(r.get('seed')))}" if r.get("seed") is not None else "",
            f"duration {escape(fmt_s(rd.duration_s))}" if rd.duration_s else "",
            f"report generated {escape(_now())}",
        ]
        if x
    )
    body = [
        f'<h1>{escape(title)}</h1><p class="sub">{sub}</p>',
        '<nav><a href="#summary">Summary</a><a href="#plots">Plots</a><a href="#links">Links</a>'
        '<a href="#engine">Engine</a><a href="#scenario">Scenario</a></nav>',
    ]
    body.append(unintended_banner(m.get("unintended_drops")))
    body.append(validity_table(rd))
    limited = [n for n, f in rd.flows.items() if f.get("window_limited")]
    if limited:
        body.append(
            '<div class="banner warn">Window-limited: ' + escape(", ".join(limited)) + " — the socket's "
            "send buffer or the receive window, not the network, limited the flow for part of the run "
            "(TCP_INFO rwnd_limited / sndbuf_limited).</div>"
        )
    incomplete = [n for n, f in rd.flows.items() if f.get("complete") is False]
    if incomplete:
        body.append('<div class="banner warn">Incomplete transfer: ' + escape(", ".join(incomplete)) + ".</div>")
    for p in rd.problems:
        body.append(f'<div class="banner warn">{escape(p)}</div>')
    body.append('<h2 id="summary">Flows</h2>' + _flows_table(rd))
    jain = m.get("jain_index")
    body.append(
        kv_table(
            [
                (
                    "Jain's fairness index",
                    escape(fmt_num(jain, 4)) + ' <span class="small">(Σx)²/(n·Σx²) over the flows\' throughputs</span>',
                ),
                ("unintended drops", escape(fmt_num(m.get("unintended_drops")))),
            ]
        )
    )
    body.append("<h2>Probes</h2>" + _probes_table(rd))
    body.append('<h2 id="plots">Plots</h2>' + plots_section(plots))
    body.append('<h2 id="links">Links</h2>' + _links_table(rd))
    body.append('<h2 id="engine">Engine</h2>' + _engine_section(m.get("engine")))
    body.append('<h2 id="scenario">Scenario</h2>' + scenario_section(rd.scenario))
    files = sorted(p for p in rd.raw.glob("*") if p.is_file()) if rd.raw.is_dir() else []
    if files:
        qlogs = [p for p in files if p.suffix == ".sqlog"]
        note = (
            '<p class="small">QUIC connections\' qlog (JSON-SEQ): '
            + ", ".join(f'<a href="raw/{escape(p.name)}">{escape(p.name)}</a>' for p in qlogs)
            + " — open them in qvis.</p>"
            if qlogs
            else ""
        )
        body.append(
            '<h2 id="raw">Raw artefacts</h2>'
            + note
            + table(
                ["file", "size"],
                [
                    [
                        f'<td><a href="raw/{escape(p.name)}">raw/{escape(p.name)}</a></td>',
                        cell(fmt_bytes(p.stat().st_size)),
                    ]
                    for p in files
                ],
            )
        )
    return page(title, "".join(body))


# ---- sweep report --------------------------------------------------------------------

# How each metric registry format prints a value.
FORMATS = {"rate": fmt_rate, "s": fmt_s, "ms": fmt_ms, "pct": fmt_pct, "num": fmt_num, "bytes": fmt_bytes}


def metric_format(name: str):
    """The printer of catalogue column `name` (a plain number if the registry lacks it)."""
    m = BY_NAME.get(name)
    return FORMATS[m.format] if m else fmt_num


def _mean_std(row, m: str, f) -> str:
    if _nan(row.get(f"{m}_mean")):
        return NA
    s = f(row[f"{m}_mean"])
    if not _nan(row.get(f"{m}_std")):
        s += f" ({f(row[f'{m}_std'])})"
    return cell(s)


def _mmm(row, m: str, f) -> str:
    if _nan(row.get(f"{m}_median")):
        return NA
    return cell(" / ".join(f(row[f"{m}_{k}"]) for k in ("min", "median", "max")))


def _mean_std_stacked(row, m: str, f) -> str:
    """Mean over the repetitions, the sample std under it (a narrow column)."""
    if _nan(row.get(f"{m}_mean")):
        return NA
    std = row.get(f"{m}_std")
    below = f'<span class="std">({escape(f(std))})</span>' if not _nan(std) else ""
    return f'<td class="num">{escape(f(row[f"{m}_mean"]))}{below}</td>'


def sweep_summary_table(agg: pd.DataFrame) -> str:
    """Mean (std under it) per point × flow, one column per metric any run has; min /
    median / max in an expandable table."""
    if agg.empty:
        return "<p>No flows.</p>"
    metrics = [
        (m.name, m.label)
        for m in TABLE
        if f"{m.name}_mean" in agg
        and not agg[f"{m.name}_mean"].isna().all()
        and not (m.shown_when_nonzero and (agg[f"{m.name}_max"].fillna(0) == 0).all())
    ]
    first = ["point", "flow", "protocol / cc", "runs"]
    rows, spread = [], []
    for _, row in agg.iterrows():
        pc = "/".join(str(x) for x in (row.get("protocol"), row.get("cc")) if not _nan(x))
        tds = [
            cell(str(row.get("point") or "default"), False),
            f"<td><b>{escape(str(row['flow']))}</b></td>",
            cell(pc or "—", False),
            cell(fmt_num(row["n"])),
        ]
        rows.append(tds + [_mean_std_stacked(row, m, metric_format(m)) for m, _ in metrics])
        spread.append(tds[:2] + [_mmm(row, m, metric_format(m)) for m, _ in metrics])
    absent = [m.label for m in TABLE if (m.name, m.label) not in metrics and not m.shown_when_nonzero]
    note = f'<p class="small">No run has a value for: {escape(", ".join(absent))}.</p>' if absent else ""
    return (
        table(first + [l for _, l in metrics], rows, "sweep")
        + note
        + "<details><summary>min / median / max over repetitions</summary>"
        + table(["point", "flow"] + [l for _, l in metrics], spread, "wrap")
        + "</details>"
    )


def _simple_agg_table(agg: pd.DataFrame, label: str, m: str, f) -> str:
    rows = []
    for _, row in agg.iterrows():
        rows.append(
            [cell(str(row.get("point") or "default"), False)]
            + ([f"<td><b>{escape(str(row[label]))}</b></td>"] if label in agg else [])
            + [cell(fmt_num(row["n"])), _mean_std(row, m, f), _mmm(row, m, f)]
        )
    return table(["point"] + ([label] if label in agg else []) + ["runs", "mean (std)", "min / median / max"], rows)


def render_sweep_html(
    sweep_dir: Path,
    df: pd.DataFrame,
    agg: pd.DataFrame,
    jain: pd.DataFrame,
    probes_agg: pd.DataFrame | None,
    runs: list[RunData],
    plots: list[Plot],
    tables: Sequence[tuple[str, pd.DataFrame]] = (),
    failed: Sequence[tuple[Path, list[dict]]] = (),
) -> str:
    swept = df.attrs.get("swept", [])
    names = sorted({str(rd.run.get("scenario") or rd.scenario.get("name") or "") for rd in runs} - {""})
    title = f"transportlab sweep — {', '.join(names) or sweep_dir.name}"
    points = list(dict.fromkeys(str(rd.run.get("point") or "") for rd in runs))
    sub = (
        f"{len(runs)} run{'s' if len(runs) != 1 else ''}, {len(points)} point{'s' if len(points) != 1 else ''}"
        + (f", swept: {', '.join(swept)}" if swept else "")
        + f" · report generated {_now()}"
    )
    body = [
        f'<h1>{escape(title)}</h1><p class="sub">{escape(sub)}</p>',
        '<nav><a href="#table">Table</a><a href="#plots">Plots</a><a href="#runs">Runs</a></nav>',
    ]
    bad = [rd for rd in runs if as_float(rd.metrics.get("unintended_drops")) > 0]
    if bad:
        total = sum(int(as_float(rd.metrics.get("unintended_drops"))) for rd in bad)
        body.append(
            unintended_banner(total, f"{len(bad)} of {len(runs)} runs (" + ", ".join(rd.name for rd in bad) + ")")
        )
    elif runs:
        body.append(unintended_banner(0, f"all {len(runs)} runs"))
    if failed:
        items = "".join(
            f"<li><code>{escape(os.path.relpath(d, sweep_dir))}</code>: "
            + escape(
                "; ".join(
                    f"{f.get('name')} ({f.get('role')} on {f.get('host')}) exited {f.get('exit_status')}: "
                    f"{f.get('message')}"
                    for f in fails
                )
            )
            + "</li>"
            for d, fails in failed
        )
        body.append(
            f'<div class="banner bad"><b>{len(failed)} run(s) failed</b> and are left out of every table '
            f"and plot below (run the sweep again to retry them):<ul>{items}</ul></div>"
        )
    if tables:
        body.append(
            '<h2 id="study">As the study lays it out</h2><p class="small">Also in tables.md beside this report.</p>'
        )
        for heading, t in tables:
            rows = [[cell(str(i), False)] + [cell(str(v)) for v in row] for i, row in zip(t.index, t.to_numpy())]
            body.append(f"<h3>{escape(heading)}</h3>" + table([t.index.name or ""] + [str(c) for c in t.columns], rows))
    body.append(
        '<h2 id="table">Flows per point</h2><p class="small">Statistics over repetitions: the mean, the sample '
        "standard deviation under it; min / median / max below the table.</p>" + sweep_summary_table(agg)
    )
    if jain is not None and not jain.empty and not jain["jain_index_mean"].isna().all():
        body.append(
            "<h2>Jain's fairness index per point</h2>"
            + _simple_agg_table(jain, "", "jain_index", lambda v: fmt_num(v, 4))
        )
    if probes_agg is not None and not probes_agg.empty:
        body.append("<h2>Probe RTT per point</h2>" + _simple_agg_table(probes_agg, "probe", "rtt_mean_ms", fmt_ms))
    body.append('<h2 id="plots">Plots</h2>' + plots_section(plots))
    rows = []
    for rd in runs:
        rep = rd.dir / "report.html"
        link = f'<a href="{escape(os.path.relpath(rep, sweep_dir))}">report</a>' if rep.is_file() else "—"
        rows.append(
            [
                cell(str(rd.run.get("point") or "default"), False),
                cell(fmt_num(rd.run.get("repetition"))),
                cell(fmt_num(rd.run.get("seed"))),
                cell(str(rd.run.get("run_id") or "—"), False),
                cell(fmt_num(rd.metrics.get("unintended_drops"))),
                f"<td>{link}</td>",
                cell(str(rd.dir), False),
            ]
        )
    body.append(
        '<h2 id="runs">Runs</h2>'
        + table(["point", "repetition", "seed", "run id", "unintended drops", "report", "directory"], rows)
    )
    return page(title, "".join(body))


# ---- comparison report ----------------------------------------------------------------


def compare_table_html(agg: pd.DataFrame) -> str:
    from transportlab.report.compare import COLUMNS

    shown = [(c, l) for c, l in COLUMNS if f"{c}_mean" in agg and not agg[f"{c}_mean"].isna().all()]
    headers = ["source", "point", "flow", "protocol / cc", "runs"] + [l for _, l in shown]
    rows = []
    for _, row in agg.iterrows():
        pc = "/".join(str(x) for x in (row.get("protocol"), row.get("cc")) if not _nan(x))
        rows.append(
            [
                f"<td><b>{escape(str(row['source']))}</b></td>",
                cell(str(row.get("point") or "default"), False),
                cell(str(row["flow"]), False),
                cell(pc or "—", False),
                cell(fmt_num(row["n"])),
            ]
            + [_mean_std(row, c, metric_format(c)) for c, _ in shown]
        )
    absent = [l for c, l in COLUMNS if (c, l) not in shown]
    note = f'<p class="small">No run has a value for: {escape(", ".join(absent))}.</p>' if absent else ""
    return table(headers, rows) + note


def agreement_table_html(pairs: pd.DataFrame) -> str:
    """Emulated and simulated side by side: a row per point × flow, per metric both
    values and the ratio; a value outside its agreement band is marked."""
    from transportlab.report.agreement import BANDS, shown_metrics, summary_lines

    metrics = shown_metrics(pairs)
    headers = ["point", "flow"]
    for m in metrics:
        headers += [f"{m.label} emulated", "simulated", "sim / emu"]
    rows = []
    for _, r in pairs.iterrows():
        tds = [cell(str(r["point"] or "default"), False), cell(str(r["flow"]), False)]
        for m in metrics:
            f = metric_format(m.name)
            agrees = r[f"{m.name}_agrees"]
            e, s, x = r[f"{m.name}_emulated"], r[f"{m.name}_simulated"], r[f"{m.name}_ratio"]
            tds += [cell(f(e) if not _nan(e) else "—"), cell(f(s) if not _nan(s) else "—")]
            ratio = "—" if _nan(x) else f"{x:.3g}"
            if agrees is False:
                tds.append(
                    f'<td class="num off" title="outside {escape(BANDS[m.name].describe(m.unit))}">'
                    f"{escape(ratio)} ✗</td>"
                )
            else:
                tds.append(cell(ratio))
        rows.append(tds)
    bands = "; ".join(f"{m.label} {BANDS[m.name].describe(m.unit)}" for m in metrics)
    lines = summary_lines(pairs)
    head = f'<p class="{"warn" if len(lines) > 1 else "small"}">{escape(lines[0])}.</p>'
    return (
        head
        + table(headers, rows)
        + f'<p class="small">Means over each point\'s repetitions. Agreement bands (✗ outside): {escape(bands)}.</p>'
    )


def render_compare_html(sources, agg: pd.DataFrame, plots: list[Plot], pairs: pd.DataFrame | None = None) -> str:
    runs = [rd for s in sources for rd in s.runs]
    title = "transportlab comparison — " + ", ".join(s.label for s in sources)
    sub = f"{len(sources)} source(s), {len(runs)} run(s) · report generated {_now()}"
    body = [
        f'<h1>{escape(title)}</h1><p class="sub">{escape(sub)}</p>',
        '<nav><a href="#table">Table</a><a href="#plots">Plots</a><a href="#sources">Sources</a></nav>',
    ]
    bad = [rd for rd in runs if as_float(rd.metrics.get("unintended_drops")) > 0]
    total = sum(int(as_float(rd.metrics.get("unintended_drops"))) for rd in bad)
    body.append(unintended_banner(total, f"{len(bad)} of {len(runs)} runs" if bad else f"all {len(runs)} runs"))
    if pairs is not None:
        body.append('<h2 id="agreement">Emulated vs simulated</h2>' + agreement_table_html(pairs))
    body.append(
        '<h2 id="table">Flows per source and point</h2><p class="small">Catalogue rows of every run, mean '
        "(sample std) over a point's repetitions.</p>" + compare_table_html(agg)
    )
    body.append('<h2 id="plots">Plots</h2>' + plots_section(plots))
    rows = [
        [f"<td><b>{escape(s.label)}</b></td>", cell(str(s.path.resolve()), False), cell(fmt_num(len(s.runs)))]
        for s in sources
    ]
    body.append('<h2 id="sources">Sources</h2>' + table(["source", "folder", "runs"], rows))
    return page(title, "".join(body))


__all__ = ["render_run_html", "render_sweep_html", "render_compare_html", "RUN_COLUMNS"]
