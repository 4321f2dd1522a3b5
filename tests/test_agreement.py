"""Emulated against simulated (`report.agreement`): pairing per point and flow, ratios
and agreement bands, on hand-made aggregates whose answers are computed by hand."""

import numpy as np
import pandas as pd

from transportlab.report.agreement import BANDS, Band, paired, summary_lines


def agg_rows():
    def row(source, point, flow, thr, qd, rtx):
        return {
            "source": source,
            "point": point,
            "flow": flow,
            "throughput_bps_mean": thr,
            "queueing_delay_mean_ms_mean": qd,
            "retransmissions_mean": rtx,
        }

    return pd.DataFrame(
        [
            row("emu", "n=10", "tcp", 100e6, 20.0, 10),
            row("sim", "n=10", "tcp", 96e6, 21.9, 14),  # 0.96: in; +1.9 ms (9.5 %): in; +4 (40 %): out
            row("emu", "n=20", "tcp", 100e6, 0.5, 0),
            row("sim", "n=20", "tcp", 94e6, 1.4, 2),  # 0.94: out; +0.9 ms: in (± 1 ms); +2: in (± 2)
            row("emu", "n=20", "udp", 50e6, np.nan, np.nan),  # no simulated row
        ]
    )


def test_bands_are_relative_or_absolute_whichever_is_wider():
    assert Band(0.10, 1.0).holds(5.0, 5.99) and not Band(0.10, 1.0).holds(5.0, 6.01)
    assert Band(0.10, 1.0).holds(100.0, 109.9) and not Band(0.10, 1.0).holds(100.0, 110.1)
    assert BANDS["throughput_bps"].describe("bit/s") == "± 5 %"
    assert BANDS["queueing_delay_mean_ms"].describe("ms") == "± 10 % or ± 1 ms"


def test_pairs_one_row_per_point_and_flow_with_both_values_and_the_ratio():
    p = paired(agg_rows(), "emu", "sim")
    assert list(zip(p["point"], p["flow"])) == [("n=10", "tcp"), ("n=20", "tcp"), ("n=20", "udp")]
    first = p.iloc[0]
    assert (first["throughput_bps_emulated"], first["throughput_bps_simulated"]) == (100e6, 96e6)
    assert first["throughput_bps_ratio"] == 0.96
    assert (first["throughput_bps_agrees"], first["queueing_delay_mean_ms_agrees"]) == (True, True)
    assert first["retransmissions_agrees"] is False
    second = p.iloc[1]
    assert second["throughput_bps_agrees"] is False
    assert (second["queueing_delay_mean_ms_agrees"], second["retransmissions_agrees"]) == (True, True)
    assert np.isnan(second["retransmissions_ratio"])  # emulated 0: no ratio, the band still applies
    udp = p.iloc[2]
    assert udp["throughput_bps_agrees"] is None and np.isnan(udp["throughput_bps_simulated"])


def test_the_summary_counts_and_names_what_is_outside():
    lines = summary_lines(paired(agg_rows(), "emu", "sim"))
    assert lines[0] == "emulated vs simulated: 4 of 6 values within their agreement band"
    assert lines[1] == "  OUTSIDE  n=10 tcp: retransmissions emulated 10, simulated 14 (1.4×)"
    assert lines[2] == "  OUTSIDE  n=20 tcp: throughput emulated 100 Mbit/s, simulated 94 Mbit/s (0.94×)"
    assert len(lines) == 3


def test_a_loss_rate_band_reads_in_points():
    assert BANDS["loss_rate"].describe("") == "± 25 % or ± 0.1 point"
