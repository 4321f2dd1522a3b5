"""S0 E5 (docs/results-s0.md), as `tlab table yield`: how fast a uTP flow gives way during
each burst of competing traffic, against what its LEDBAT rule allows.

LEDBAT changes its window by gain × (target − qdelay) / target bytes per RTT (libutp:
MAX_CWND_INCREASE_BYTES_PER_RTT; libtorrent: utp_gain_factor), so at a queueing delay
qdelay above the target its rate (window / RTT) falls by about
gain × 8 × (qdelay − target) / target / RTT² bit/s per second. Per run and burst: the uTP
flow's rate in the second before the burst, its measured fall per second over the burst
(least squares over 1 s bins of its departures from its bottleneck), the ping's mean RTT
over the probes sent in the burst (qdelay = RTT − the base RTT), and that rule's fall.
Also the two things that decide how hard the burst pushes (docs/results-s0.md "E5"): the
ping's mean RTT in the second before the burst (the queue the uTP flow already keeps,
which the burst's TCP takes for its base RTT) and the burst's slow-start exit — the
first finite ssthresh its sender's TCP_INFO series records, in packets (HyStart, or the
first loss) — after which CUBIC grows by its cubic curve instead of doubling per RTT.

The bursts are the run's other flows' [start, end) spans; gain and target are the uTP
flow's `cc_params` or, where it sets none, its implementation's defaults
(`utp_agent.parameters`, the one list of them); the base RTT is a parameter (default
100 ms, S0 E5's path) named in the caption.

    tlab table yield RESULTS/s0/s0-e5 [--base-rtt 100]
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from transportlab import metrics as M
from transportlab.artefacts.rundir import RunDir
from transportlab.report.tables.common import TableError, arm, cell, markdown, run_dirs
from transportlab.utp_agent.parameters import IMPLEMENTATIONS

DEFAULT_BASE_RTT_MS = 100.0
BIN_NS = 1_000_000_000
PING = "ping"
TCP_INFINITE_SSTHRESH = 0x7FFFFFFF  # TCP_INFO's ssthresh before slow start first ends


@dataclass(frozen=True)
class Ledbat:
    gain_bytes: float  # window growth per RTT at zero queueing delay
    target_s: float
    base_rtt_s: float


@dataclass(frozen=True)
class BurstYield:
    start_s: float
    end_s: float
    before_bps: float  # mean rate in the second before the burst
    during_bps: float  # mean rate over the burst
    rtt_before_s: float  # the ping's mean RTT in the second before the burst (NaN: none)
    fall_bps_per_s: float  # −(least-squares slope of the rate over the burst)
    rtt_s: float  # the ping's mean RTT in the burst (NaN: no answered ping)
    rule_fall_bps_per_s: float  # what LEDBAT's window rule allows at that RTT


def ledbat_fall(cc: Ledbat, rtt_s: float) -> float:
    """The rate's fall (bit/s per s) LEDBAT's rule gives at a mean RTT `rtt_s`."""
    if not np.isfinite(rtt_s):
        return float("nan")
    over = max(0.0, (rtt_s - cc.base_rtt_s - cc.target_s) / cc.target_s)
    return cc.gain_bytes * 8 * over / rtt_s**2


def _mean_rtt(ping: pd.DataFrame | None, t0_ns: int, a: float, b: float) -> float:
    """The ping's mean RTT (s) over probes sent in [a, b) s; NaN if none answered."""
    if ping is None or "rtt_ns" not in ping:
        return float("nan")
    sent_s = (ping["send_ns"].to_numpy(np.float64) - t0_ns) / 1e9
    r = ping["rtt_ns"].to_numpy(np.float64)[(sent_s >= a) & (sent_s < b)]
    return float(np.nanmean(r)) / 1e9 if np.isfinite(r).any() else float("nan")


def slow_start_exit(tcp_info: pd.DataFrame | None) -> float:
    """The first finite ssthresh (packets) in a TCP sender's TCP_INFO series: where its
    first slow start ended. NaN without a series or while slow start never ended."""
    if tcp_info is None or "ssthresh" not in tcp_info:
        return float("nan")
    ss = tcp_info["ssthresh"].to_numpy(np.int64)
    done = ss[ss < TCP_INFINITE_SSTHRESH]
    return float(done[0]) if len(done) else float("nan")


def burst_yield(
    rates: pd.Series, ping: pd.DataFrame | None, t0_ns: int, span: tuple[float, float], cc: Ledbat
) -> BurstYield:
    """One burst's row. `rates`: the flow's rate (bit/s) in 1 s bins indexed by bin start
    (ns); `ping`: the probe's series (`send_ns`, `rtt_ns`), None if it has none."""
    a, b = span
    t_s = (np.asarray(rates.index, dtype=np.int64) - t0_ns) / 1e9
    v = rates.to_numpy(np.float64)
    last_second = (t_s >= a - 1) & (t_s < a)
    before = float(v[last_second].mean()) if last_second.any() else float("nan")
    inside = (t_s >= a) & (t_s < b)
    slope = float(np.polyfit(t_s[inside], v[inside], 1)[0]) if inside.sum() >= 2 else float("nan")
    during = float(v[inside].mean()) if inside.any() else float("nan")
    rtt_s = _mean_rtt(ping, t0_ns, a, b)
    return BurstYield(a, b, before, during, _mean_rtt(ping, t0_ns, a - 1, a), -slope, rtt_s, ledbat_fall(cc, rtt_s))


def run_rows(run: RunDir, base_rtt_s: float) -> tuple[dict, Ledbat, list[tuple[BurstYield, float]]]:
    """The run's uTP flow (its scenario entry), its LEDBAT settings and a row per burst:
    the uTP flow's yield and the burst's slow-start exit (packets; NaN for a burst that
    is not TCP or has no TCP_INFO series)."""
    scen_flows = run.scenario.dump()["flows"]
    utp = [f for f in scen_flows if f["protocol"] == "utp"]
    if len(utp) != 1:
        raise TableError(f"{run.dir / 'scenario.json'}: flows: {len(utp)} utp flows (the table needs one)")
    (long,) = utp
    defaults = IMPLEMENTATIONS.get(long.get("implementation"))
    if defaults is None:
        raise TableError(
            f"{run.dir / 'scenario.json'}: flows.{long['name']}.implementation: unknown ({long.get('implementation')!r})"
        )
    params = long.get("cc_params") or {}
    cc = Ledbat(
        gain_bytes=float(params.get("gain", defaults["gain"].default)),
        target_s=float(params.get("target", defaults["target"].default)) / 1e3,  # ms, as the parameter's unit
        base_rtt_s=base_rtt_s,
    )
    bursts = sorted((f["start_s"], f["end_s"], f["name"]) for f in scen_flows if f is not long)
    if not bursts:
        raise TableError(f"{run.dir / 'scenario.json'}: flows: no flow besides {long['name']!r} to yield to")
    m = run.metrics.flows[long["name"]]
    if m.data is None or not m.path:
        raise TableError(f"{run.dir / 'metrics.json'}: flows.{long['name']}: no packets of the flow in the log")
    flow = M.Flow(**m.data.model_dump())
    rates = M.throughput_by_flow(run.records, m.path[-1], BIN_NS, origin_ns=run.t0_ns, flows={"long": flow})["long"]
    ping = run.series(PING)
    rows = []
    for a, b, name in bursts:
        burst = run.metrics.flows.get(name)
        exit_pkts = float("nan")
        if burst is not None and burst.protocol == "tcp":
            # the data sender's series: the client of an upload, the server of a download
            exit_pkts = slow_start_exit(run.series(f"{name}-{'client' if burst.direction == 'upload' else 'server'}"))
        rows.append((burst_yield(rates, ping, run.t0_ns, (a, b), cc), exit_pkts))
    return long, cc, rows


HEAD = [
    "arm",
    "run",
    "implementation",
    "gain (B/RTT)",
    "burst",
    "rate before (Mbit/s)",
    "rate in burst (Mbit/s)",
    "ping RTT before (ms)",
    "burst's slow-start exit (packets)",
    "measured fall (Mbit/s per s)",
    "ping RTT in burst (ms)",
    "fall by LEDBAT's rule (Mbit/s per s)",
]


def table(folder: Path, base_rtt_ms: float | None = None) -> str:
    """The caption and one row per burst of each analysed run under `folder` (base RTT
    `base_rtt_ms`, DEFAULT_BASE_RTT_MS if None)."""
    base_rtt_ms = DEFAULT_BASE_RTT_MS if base_rtt_ms is None else base_rtt_ms
    if not base_rtt_ms > 0:
        raise ValueError(f"--base-rtt must be a positive number of ms (got {base_rtt_ms})")
    rows = []
    for run in run_dirs(Path(folder)):
        long, cc, bursts = run_rows(run, base_rtt_ms / 1e3)
        for b, exit_pkts in bursts:
            rows.append(
                [
                    arm(run),
                    run.dir.name,
                    long["implementation"],
                    f"{cc.gain_bytes:g}",
                    f"{b.start_s:g}–{b.end_s:g} s",
                    cell(b.before_bps / 1e6, ".2f"),
                    cell(b.during_bps / 1e6, ".2f"),
                    cell(b.rtt_before_s * 1e3, ".0f"),
                    cell(exit_pkts, ".0f"),
                    cell(b.fall_bps_per_s / 1e6, ".2f"),
                    cell(b.rtt_s * 1e3, ".0f"),
                    cell(b.rule_fall_bps_per_s / 1e6, ".2f"),
                ]
            )
    caption = (
        f"The uTP flow during each burst: its rate in the second before and over the burst, the {PING!r} probe's "
        f"mean RTT in the second before (the queue the burst starts on), the burst's slow-start exit (its sender's "
        f"first finite ssthresh), the uTP rate's fall per second over the burst "
        f"(least squares, 1 s bins at its bottleneck), the probe's mean RTT over the burst, and the fall "
        f"LEDBAT's rule gives at that RTT (gain × 8 × (qdelay − target)/target / RTT², qdelay = RTT − a base RTT "
        f"of **{base_rtt_ms:g} ms**)."
    )
    return "\n".join([caption, "", *markdown(HEAD, rows)])
