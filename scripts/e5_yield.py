#!/usr/bin/env python3
"""S0 E5: how fast the long uTP flow gives way during each TCP burst, against what its
LEDBAT rule gives. LEDBAT changes its window by gain × (target − qdelay) / target bytes
per RTT (libutp: gain = MAX_CWND_INCREASE_BYTES_PER_RTT; libtorrent: utp_gain_factor),
so at a queueing delay qdelay above the 100 ms target its rate falls by about
gain × 8 × (qdelay − target) / target / RTT² bit/s per second. Per run and burst: the
long flow's rate in the second before the burst, its measured fall per second over the
burst (least squares over 1 s bins at the bottleneck), the ping's mean RTT in the burst
(qdelay = RTT − the 100 ms base RTT), and that rule's fall.

    python3 scripts/e5_yield.py results/s0/s0-e5
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from transportlab import metrics as M
from transportlab.artefacts.rundir import RunDir
from transportlab.report.rundata import RunData

BURSTS = ((20.0, 30.0), (40.0, 50.0))
BASE_RTT_S, TARGET_S = 0.100, 0.100
GAIN = {"libutp": 3000, "libtorrent": 3000}  # the implementations' defaults; cc_params.gain overrides


def rows(run_dir: Path):
    run, rd = RunDir(run_dir), RunData.load(run_dir)
    m, scen = run.metrics, run.scenario.dump()
    long = next(f for f in scen["flows"] if f["name"] == "long")
    gain = (long.get("cc_params") or {}).get("gain", GAIN.get(long.get("implementation"), 3000))
    f = m.flows["long"]
    flow = M.Flow(**f.data.model_dump())
    t0 = run.t0_ns
    rates = M.throughput_by_flow(run.records, f.path[-1], 1_000_000_000, origin_ns=t0, flows={"long": flow})["long"]
    t_s = (np.asarray(rates.index, dtype=np.int64) - t0) / 1e9
    ping = rd.series("ping")
    for a, b in BURSTS:
        before = rates[(t_s >= a - 1) & (t_s < a)].mean()
        sel = (t_s >= a) & (t_s < b)
        slope = np.polyfit(t_s[sel], rates[sel].to_numpy(), 1)[0] if sel.sum() >= 2 else float("nan")
        rtt_s = float("nan")
        if ping is not None and "rtt_ns" in ping:
            ts = (ping["send_ns"].to_numpy(np.float64) - t0) / 1e9
            r = ping["rtt_ns"].to_numpy(np.float64)[(ts >= a) & (ts < b)]
            rtt_s = float(np.nanmean(r)) / 1e9 if len(r) else float("nan")
        qdelay = rtt_s - BASE_RTT_S
        bound = gain * 8 * max(0.0, (qdelay - TARGET_S) / TARGET_S) / rtt_s**2 if rtt_s == rtt_s else float("nan")
        yield long.get("implementation"), gain, f"{a:g}–{b:g} s", before / 1e6, slope / 1e6, rtt_s * 1e3, bound / 1e6


def main(argv: list[str]) -> int:
    print(
        "| run | implementation | gain (B/RTT) | burst | rate before (Mbit/s) | measured fall (Mbit/s per s) | ping RTT in burst (ms) | fall by LEDBAT's rule (Mbit/s per s) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for sweep in argv:
        for d in sorted(Path(sweep).glob("*/rep-*")):
            if (d / "DONE").exists():
                for impl, gain, burst, before, slope, rtt, bound in rows(d):
                    print(
                        f"| {d.parent.name}/{d.name} | {impl} | {gain} | {burst} | {before:.2f} | {-slope:.2f} | {rtt:.0f} | {bound:.2f} |"
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
