"""`tlab table convergence` (S3) and `tlab table yield` (S0 E5) on hand-made inputs whose
answers are worked out by hand below, and their refusals on a run they do not fit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from transportlab.artefacts.packetlog import DEPARTURE, RECORD
from transportlab.metrics import Flow
from transportlab.report.tables.common import TableError
from transportlab.report.tables.convergence import TwoFlows, crossings
from transportlab.report.tables.hol import sender_window
from transportlab.report.tables.hol import table as hol_table
from transportlab.report.tables.ledbat_yield import (
    TCP_INFINITE_SSTHRESH,
    Ledbat,
    burst_yield,
    ledbat_fall,
    slow_start_exit,
)

RUNS = Path(__file__).parent / "data" / "runs"
S = 1_000_000_000
T0 = 5 * S  # the run's time 0, not the log's: bins must start there
A = Flow.of("10.0.0.1", "10.0.0.9", 40000, 5201, "tcp")
B = Flow.of("10.0.0.2", "10.0.0.9", 40001, 5202, "tcp")
BOTTLENECK, A_FIRST, B_FIRST = 0, 1, 2
HALF = S // 2


def _departures(flow: Flow, direction: int, counts: list[int], first_half: int) -> list[tuple]:
    """`counts[i]` 1000-byte departures spread inside half-second i (from `first_half`)."""
    out = []
    for i, n in enumerate(counts):
        start = T0 + (first_half + i) * HALF
        out += [(start + (j + 1) * HALF // (n + 1), flow, direction) for j in range(n)]
    return out


def _log(events: list[tuple]) -> np.ndarray:
    recs = np.zeros(len(events), dtype=RECORD)
    for r, (t, f, d) in zip(recs, sorted(events, key=lambda e: e[0])):
        r["t_ns"] = r["t_actual_ns"] = t
        r["src"], r["dst"], r["sport"], r["dport"], r["proto"] = f
        r["direction"], r["event"], r["size"] = d, DEPARTURE, 1000
    return recs


# Half-seconds 4..9 (t = 2.0–5.0 s after the join at 2 s); A ran alone before (2 per half).
#   at the bottleneck  A: 2 2 | 1 3 | 2 2   (per 1 s: 4 4 4)   B: 1 1 | 2 1 | 3 3   (2 3 6)
#     1 s bins:   A − B = +2, +1, −2 → first sign change in the bin starting at 4 s → 2.0 s
#     0.5 s bins: A − B = +1, +1, −1, … → the bin starting at 3.0 s → 1.0 s
#   sent (first hops)  A: 2 2 | 1 1 | 2 2   (4 2 4)            B as at the bottleneck
#     1 s bins:   +2, −1 → the bin at 3 s → 1.0 s;  0.5 s bins: +1, +1, −1 → 1.0 s
def _two_flow_log() -> np.ndarray:
    ev = _departures(A, BOTTLENECK, [2] * 4, 0) + _departures(A, A_FIRST, [2] * 4, 0)
    ev += _departures(A, BOTTLENECK, [2, 2, 1, 3, 2, 2], 4) + _departures(A, A_FIRST, [2, 2, 1, 1, 2, 2], 4)
    ev += _departures(B, BOTTLENECK, [1, 1, 2, 1, 3, 3], 4) + _departures(B, B_FIRST, [1, 1, 2, 1, 3, 3], 4)
    return _log(ev)


TWO = TwoFlows({"a": A, "b": B}, T0 + 2 * S, BOTTLENECK, {"a": A_FIRST, "b": B_FIRST})


def test_crossing_depends_on_the_bin_as_worked_out():
    log = _two_flow_log()
    assert crossings(log, T0, TWO, S) == (2.0, 1.0)
    assert crossings(log, T0, TWO, HALF) == (1.0, 1.0)


def test_lines_that_never_cross():
    # A sends 4 per half-second throughout, B 1 from the join on, at both places: A stays
    # ahead in every bin after the join.
    ev = _departures(A, BOTTLENECK, [4] * 10, 0) + _departures(B, BOTTLENECK, [1] * 6, 4)
    ev += _departures(A, A_FIRST, [4] * 10, 0) + _departures(B, B_FIRST, [1] * 6, 4)
    assert crossings(_log(ev), T0, TWO, S) == (None, None)


def _rates(per_second_mbit: dict[int, float]) -> pd.Series:
    idx = pd.Index([T0 + k * S for k in per_second_mbit], name="t_ns")
    return pd.Series([v * 1e6 for v in per_second_mbit.values()], index=idx)


LIBUTP = Ledbat(gain_bytes=3000, target_s=0.100, base_rtt_s=0.100)


def test_burst_yield_as_worked_out():
    # 20 Mbit/s up to 20 s, then falling 1 Mbit/s per second over the 20–30 s burst;
    # pings in the burst answer in 250 and 350 ms (mean 300 ms), one before it in 100 ms.
    # qdelay = 300 − 100 = 200 ms, (200 − 100)/100 = 1, so LEDBAT's rule gives
    # 3000 B × 8 × 1 / 0.3² s² = 266 666.7 bit/s per s.
    rates = _rates({18: 20.0, 19: 20.0, **{20 + k: 20.0 - k for k in range(10)}, 30: 5.0})
    ping = pd.DataFrame({"send_ns": [T0 + 19 * S, T0 + 21 * S, T0 + 29 * S], "rtt_ns": [100e6, 250e6, 350e6]})
    b = burst_yield(rates, ping, T0, (20.0, 30.0), LIBUTP)
    assert (b.before_bps, b.rtt_s) == (20e6, pytest.approx(0.300))
    # over the burst: 20, 19, …, 11 Mbit/s, mean 15.5; the ping sent at 19 s answered in 100 ms
    assert (b.during_bps, b.rtt_before_s) == (pytest.approx(15.5e6), pytest.approx(0.100))
    assert b.fall_bps_per_s == pytest.approx(1e6)
    assert b.rule_fall_bps_per_s == pytest.approx(3000 * 8 / 0.09)


def test_ledbat_allows_no_fall_under_its_target_and_none_without_pings():
    assert ledbat_fall(LIBUTP, 0.180) == 0.0  # 80 ms of queueing, under the 100 ms target
    assert ledbat_fall(Ledbat(1500, 0.100, 0.100), 0.250) == pytest.approx(1500 * 8 * 0.5 / 0.0625)
    b = burst_yield(_rates({k: 10.0 for k in range(19, 30)}), None, T0, (20.0, 30.0), LIBUTP)
    assert b.fall_bps_per_s == pytest.approx(0.0, abs=1e-6) and np.isnan(b.rtt_s) and np.isnan(b.rule_fall_bps_per_s)


def test_slow_start_exit_is_the_first_finite_ssthresh():
    inf = TCP_INFINITE_SSTHRESH
    assert slow_start_exit(pd.DataFrame({"ssthresh": [inf, inf, 89, 89, 62]})) == 89.0
    assert np.isnan(slow_start_exit(pd.DataFrame({"ssthresh": [inf, inf]})))  # still in slow start
    assert np.isnan(slow_start_exit(None))


def test_hol_sender_window_counts_established_samples_only():
    # five samples: one in SYN-SENT (state 2) with a huge window, four established with
    # cwnd 4, 6, 8, 10 of which two hold unsent bytes
    info = pd.DataFrame({"state": [2, 1, 1, 1, 1], "cwnd": [99, 4, 6, 8, 10], "notsent_bytes": [0, 0, 1448, 0, 2896]})
    (p10, p50, p90), unsent = sender_window(info)
    assert (p10, p50, p90) == (pytest.approx(4.6), 7.0, pytest.approx(9.4))  # linear between samples
    assert unsent == 0.5


def test_tables_refuse_a_run_they_do_not_fit(capsys):
    from transportlab.cli import main

    assert main(["table", "convergence", str(RUNS / "emulated")]) == 2
    assert "exactly two data flows, the run has 1" in capsys.readouterr().err
    assert main(["table", "convergence", str(RUNS / "emulated"), "--bin", "0"]) == 2
    assert "--bin must be a positive number of seconds (got 0.0)" in capsys.readouterr().err
    assert main(["table", "yield", str(RUNS / "emulated")]) == 2
    assert "scenario.json: flows: 0 utp flows" in capsys.readouterr().err


def test_hol_table_names_the_runs_it_cannot_read_instead_of_failing():
    # The recorded simulated run carries one QUIC flow: no TCP sequence numbers to read.
    folder = Path(__file__).parent / "data" / "runs" / "simulated"
    with pytest.raises(TableError, match="no run with a TCP records flow"):
        hol_table(folder)
