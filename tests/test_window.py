"""`metrics.window` on hand-made series whose answers are worked out below, and `tlab table
window` on the recorded runs (tests/data/runs/)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from transportlab.cli import main
from transportlab.metrics.window import window_course
from transportlab.report.rundata import RunData

RUNS = Path(__file__).parent / "data" / "runs"
NA = np.nan


def _series(cwnd_kb, srtt_ms=None, min_rtt_ms=None, step_ms=10) -> pd.DataFrame:
    n = len(cwnd_kb)
    frame = pd.DataFrame({"t_ns": 5_000_000_000 + np.arange(n, dtype=np.int64) * step_ms * 1_000_000})
    # KB and ms in, bytes and µs out: both × 1000.
    for col, values in (("cwnd_bytes", cwnd_kb), ("srtt_us", srtt_ms), ("min_rtt_us", min_rtt_ms)):
        if values is not None:
            frame[col] = pd.array([None if np.isnan(v) else round(v * 1000) for v in values], dtype="UInt64")
    return frame


def test_cuts_the_window_before_the_first_and_the_settled_medians():
    #            t (ms): 0   10  20  30  40  50  60  70  80  90  100 110
    cwnd = [NA, 20, 30, 30, 21, 21, 25, 30, 30, 20, 15, 18]
    srtt = [NA, 20, 20, 20, 40, 20, 20, NA, 20, 20, 30, 30]
    min_rtt = [NA, NA, 18, 17, 17, 17.5, 17, 17, 17, 17, 17, 17]
    c = window_course(_series(cwnd, srtt, min_rtt), settle_s=0.05)
    # Falls at 40 ms (30 → 21) and from 90 ms on (30 → 20 → 15: one cut over two samples).
    assert (c.cuts, c.first_cut_s, c.before_first_cut_bytes) == (2, 0.04, 30_000)
    assert c.min_rtt_ms == 17.0
    # From 50 ms: windows 21 25 30 30 20 15 18 → 21 KB; sRTTs 20 20 20 20 30 30 (one unknown) → 20 ms.
    assert (c.median_window_bytes, c.median_srtt_ms) == (21_000, 20.0)
    assert c.window_rate_bps == pytest.approx(21_000 * 8 / 0.020)


def test_a_window_never_cut_and_nothing_after_the_settling_time():
    c = window_course(_series([10, 20, 40, 40, 40]), settle_s=1.0)
    assert (c.cuts, c.first_cut_s, c.before_first_cut_bytes) == (0, None, 40_000)
    assert (c.min_rtt_ms, c.median_window_bytes, c.median_srtt_ms, c.window_rate_bps) == (None, None, None, None)


def test_a_series_without_a_window_has_no_course():
    assert window_course(_series([NA, NA]), settle_s=0) is None
    assert window_course(pd.DataFrame({"t_ns": [1, 2], "srtt_us": [5, 5]}), settle_s=0) is None


def test_table_of_the_recorded_simulated_quic_download(capsys):
    run = RUNS / "simulated"
    assert main(["table", "window", str(run), "--settle", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| run | flow | min RTT (ms) |") and len(lines) == 3
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells[:2] == ["base/rep-0", "bulk"]
    assert 20.0 <= float(cells[2]) < 25.0  # 2 × 10 ms of propagation, plus serialisation
    # Each cut is a congestion event; a 10 ms sample can hold two, never make one.
    series, _ = RunData.load(next(run.glob("*/rep-0"))).sender_series("bulk")
    assert 1 <= int(cells[5]) <= int(series["congestion_events"].max())


def test_a_settling_time_that_is_no_time_is_refused(capsys):
    assert main(["table", "window", str(RUNS / "emulated"), "--settle", "-1"]) == 2
    assert "--settle: -1 is not a time in seconds ≥ 0" in capsys.readouterr().err
