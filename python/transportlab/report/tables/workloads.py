"""Tables of S2's application workloads from a sweep folder's `metrics.json` files
(docs/metrics.md; the scenarios are scenarios/s2/voip.toml, streaming.toml, cpu.toml and
hol_bulk.toml). One row per run; the run's sweep point (its folder name) says the arm.

    tlab table workloads voip RESULTS/s2-voip
    tlab table workloads streaming RESULTS/s2-streaming
    tlab table workloads cpu RESULTS/s2-cpu
    tlab table workloads hol-bulk RESULTS/s2-hol-bulk

`voip` also writes the loss-burst lengths' CDF per arm and buffer (all numbers of
competing flows together) as `burst-cdf.csv` in the sweep folder.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from transportlab import metrics as M
from transportlab.artefacts.rundir import RunDir, RunDirError
from transportlab.report.tables.common import flows, run_dirs


def runs(folder: Path) -> list[tuple[str, RunDir]]:
    """(sweep point label, run) of every run with a metrics.json, in order."""
    out = []
    for run in run_dirs(folder, "**/metrics.json"):
        name = run.dir.name
        point = run.dir.parent.name if name.startswith("rep-") else name
        rep = name if name.startswith("rep-") else ""
        out.append((f"{point} {rep}".strip(), run))
    return out


def voip(folder: Path) -> str:
    out: list[str] = []
    out.append(
        "| arm | competing flows | frames | missing 150 ms | missing 200 ms | longest burst 150 / 200 ms | median latency ms |"
    )
    out.append("|---|---|---|---|---|---|---|")
    cdf_rows = ["arm,buffer,burst_frames,cdf"]
    for label, run in runs(folder):
        for name, f in flows(run).items():
            v = f.get("voip")
            if not v:
                continue
            series = run.records_series(name)
            lat = M.frame_latencies(series, v["frames_sent"])
            for g, per in sorted(v.get("by_group", {}).items(), key=lambda kv: int(kv[0])):
                a, b = per["150ms"], per["200ms"]
                med = (per.get("frame_latency_ms") or {}).get("p50")
                out.append(
                    f"| {label} | {g} | {a['frames']} | {a['missed']} ({100 * a['missed_share']:.1f} %) | "
                    f"{b['missed']} ({100 * b['missed_share']:.1f} %) | {a['longest_burst']} / {b['longest_burst']} | {'–' if med is None else f'{med:.1f}'} |"
                )
            a, b = v["playout"]["150ms"], v["playout"]["200ms"]
            ok = lat[np.isfinite(lat)]
            out.append(
                f"| {label} | all | {a['frames']} | {a['missed']} ({100 * a['missed_share']:.1f} %) | "
                f"{b['missed']} ({100 * b['missed_share']:.1f} %) | {a['longest_burst']} / {b['longest_burst']} | "
                f"{np.median(ok) / 1e6:.1f} |"
            )
            for buf in ("150ms", "200ms"):
                lengths = np.sort(np.asarray(v["playout"][buf]["burst_lengths"]))
                for i, x in enumerate(lengths):
                    if i + 1 == len(lengths) or lengths[i + 1] != x:
                        cdf_rows.append(f"{label},{buf},{int(x)},{(i + 1) / len(lengths):.4f}")
    (folder / "burst-cdf.csv").write_text("\n".join(cdf_rows) + "\n")
    out.append(f"\nloss-burst CDF: {folder / 'burst-cdf.csv'}")
    return "\n".join(out)


def streaming(folder: Path) -> str:
    """Per session: records, latency, goodput, efficiency, retransmission rate (tcp:
    tcp_info's; quic: packets declared lost ÷ packets sent; udp repairs nothing: "–") and
    the network's loss rate of the flow's packets (the packet log's, every arm)."""
    out: list[str] = []
    out.append(
        "| arm | session | records sent / delivered | latency p50 / p95 / p99 ms | goodput kbit/s | efficiency | retransmission rate | loss rate |"
    )
    out.append("|---|---|---|---|---|---|---|---|")
    for label, run in runs(folder):
        total = 0.0
        for name, f in flows(run).items():
            lat = f.get("record_latency_ms") or {}
            eff = f.get("bandwidth_efficiency")
            total += eff or 0.0
            out.append(
                f"| {label} | {name} | {f.get('records_sent')} / {f.get('records_delivered')} | "
                f"{lat.get('p50', float('nan')):.0f} / {lat.get('p95', float('nan')):.0f} / {lat.get('p99', float('nan')):.0f} | "
                f"{(f.get('records_goodput_bps') or 0) / 1e3:.1f} | {'–' if eff is None else f'{eff:.3f}'} | "
                f"{share(f.get('retransmission_rate'))} | {share(f.get('loss_rate'))} |"
            )
        out.append(f"| {label} | all | | | | {total:.3f} | | |")
    out.append(
        "\n| arm | sessions | records sent / delivered | latency p50 (sessions' range) ms | "
        "p99 (range) ms | efficiency (all) | retransmission rate (range) | loss rate (range) |"
    )
    out.append("|---|---|---|---|---|---|---|---|")
    for label, run in runs(folder):
        fs = list(flows(run).values())
        lat = [f.get("record_latency_ms") or {} for f in fs]
        out.append(
            f"| {label} | {len(fs)} | {sum(f.get('records_sent') or 0 for f in fs)} / "
            f"{sum(f.get('records_delivered') or 0 for f in fs)} | {span([x.get('p50') for x in lat], '.0f')} | "
            f"{span([x.get('p99') for x in lat], '.0f')} | {sum(f.get('bandwidth_efficiency') or 0.0 for f in fs):.3f} | "
            f"{span([f.get('retransmission_rate') for f in fs], '.2%')} | {span([f.get('loss_rate') for f in fs], '.2%')} |"
        )
    return "\n".join(out)


def span(values: list, fmt: str) -> str:
    """min – max of the known values; "–" when none is known (a metric the arm has not)."""
    v = [x for x in values if x is not None and x == x]
    if not v:
        return "–"
    lo, hi = format(min(v), fmt), format(max(v), fmt)
    return lo if lo == hi else f"{lo} – {hi}"


def share(x: float | None) -> str:
    """A fraction as a percentage; "–" when the metric does not exist (None) or is NaN."""
    return "–" if x is None or x != x else f"{100 * x:.2f} %"


def cpu(folder: Path) -> str:
    """One row per run, then per loss rate and arm the median over repetitions of the
    total CPU seconds and its ratio to raw TCP's (arm `tcp-raw`) median at the same loss
    rate."""
    out: list[str] = []
    rows = []
    for label, run in runs(folder):
        (f,) = flows(run).values()
        c = f.get("cpu_s") or {}
        parts = dict(p.split("=", 1) for p in label.split()[0].split(","))
        rows.append((parts.get("loss", "?"), parts.get("arm", "?"), label.split()[-1], c, f))
    out.append(
        "| loss | arm | run | client user / sys s | server user / sys s | total s | transfer s | records delivered |"
    )
    out.append("|---|---|---|---|---|---|---|---|")
    for loss, arm, rep, c, f in rows:
        out.append(
            f"| {loss} | {arm} | {rep} | {sec(c.get('client_user'))} / {sec(c.get('client_sys'))} | "
            f"{sec(c.get('server_user'))} / {sec(c.get('server_sys'))} | {sec(c.get('total'))} | "
            f"{seconds(transfer_s(f))} | {f.get('records_delivered') if f.get('records_delivered') is not None else '–'} |"
        )
    totals: dict[tuple[str, str], list[float]] = {}
    for loss, arm, _, c, _ in rows:
        if c.get("total") is not None:
            totals.setdefault((loss, arm), []).append(c["total"])
    out.append("\n| loss | arm | runs | median total CPU s | relative to raw TCP |")
    out.append("|---|---|---|---|---|")
    for (loss, arm), v in totals.items():
        raw = totals.get((loss, "tcp-raw"))
        ratio = M.cpu_ratio(float(np.median(v)), float(np.median(raw)) if raw else None)
        out.append(f"| {loss} | {arm} | {len(v)} | {np.median(v):.3f} | {'–' if ratio is None else f'{ratio:.2f}'} |")
    return "\n".join(out)


def sec(x: float | None) -> str:
    """CPU seconds; "–" when an agent did not report them."""
    return "–" if x is None else f"{x:.3f}"


def seconds(x: float) -> str:
    """A transfer time; "–" where the flow has none (udp: no goodput of a connection)."""
    return "–" if x != x else f"{x:.1f}"


def transfer_s(f: dict) -> float:
    """Set-up to close: the 30 MB (stream bytes) over the client's goodput."""
    g = f.get("goodput_bps")
    return 30_001_112 * 8 / g if g else float("nan")


def hol_bulk(folder: Path) -> str:
    """Bytes delivered at the end of every 5th second per arm (the unordered arm also its
    stream alone), then, for each unordered run, the bytes its stream alone held back
    behind holes that the packet path had already handed over (unordered − stream alone,
    10 ms bins): mean and maximum over the transfer."""
    out: list[str] = []
    cols = []
    held = []
    for label, run in runs(folder):
        t0 = run.t0_ns
        series = run.series("bulk-client-records")
        if series is None:
            raise RunDirError(f"{run.raw / 'bulk-client-records.arrow'}: missing")
        cols.append((label, M.delivered_over_time(series, t0, 1.0)))
        if (series["via"] == "packet").any():
            stream = series.dropna(subset=["stream_ns"]).assign(deliver_ns=lambda d: d["stream_ns"].astype("int64"))
            cols.append((f"{label} (its stream alone)", M.delivered_over_time(stream, t0, 1.0)))
            fine_u = M.delivered_over_time(series, t0, 0.01)["bytes"].to_numpy()
            fine_s = M.delivered_over_time(stream, t0, 0.01)["bytes"].to_numpy()
            n = max(len(fine_u), len(fine_s))
            fine_u = np.pad(fine_u, (0, n - len(fine_u)), mode="edge")
            fine_s = np.pad(fine_s, (0, n - len(fine_s)), mode="edge")
            diff = fine_u - fine_s
            held.append((label, diff.mean(), diff.max(), int(series["size"].sum())))
    n = max(len(d) for _, d in cols)
    out.append("| t s | " + " | ".join(f"{lab} MB" for lab, _ in cols) + " |")
    out.append("|---" * (len(cols) + 1) + "|")
    for i in list(range(4, n, 5)) + ([n - 1] if (n - 1) % 5 != 4 else []):
        vals = [f"{d['bytes'].iloc[min(i, len(d) - 1)] / 1e6:.3f}" for _, d in cols]
        out.append(f"| {i + 1} | " + " | ".join(vals) + " |")
    out.append("\n| arm | records delivered | latency p50 / p99 ms | late ≥ 1 RTT |")
    out.append("|---|---|---|---|")
    for label, run in runs(folder):
        f = flows(run)["bulk"]
        lat = f.get("record_latency_ms") or {}
        late = f.get("records_late_share")
        out.append(
            f"| {label} | {f.get('records_delivered')} | {lat.get('p50', float('nan')):.0f} / "
            f"{lat.get('p99', float('nan')):.0f} | {'–' if late is None else f'{100 * late:.1f} %'} |"
        )
    for label, mean, peak, total in held:
        out.append(
            f"\n{label}: the stream alone held back {mean / 1e3:.1f} kB on average "
            f"(max {peak / 1e3:.1f} kB) of what the packet path had handed over; {total / 1e6:.3f} MB in all"
        )
    return "\n".join(out)


KINDS = {"voip": voip, "streaming": streaming, "cpu": cpu, "hol-bulk": hol_bulk}
