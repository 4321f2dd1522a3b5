"""Workloads on the records workload (VoIP playout, streaming efficiency and
retransmission rate, CPU relative to raw TCP, bytes delivered over time): the metrics on
hand-made series whose answers are computed by hand in the comments, and the scenario
fields' errors."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from one_flow import assert_refused, load_one_flow
from test_report import T0, _write_arrow, make_run
from transportlab import metrics as M
from transportlab.kinds.workloads import cpu_seconds
from transportlab.plan.resolve import to_flows
from transportlab.report.rundata import RunData
from transportlab.report.style import Colors
from transportlab.report.workloadplots import plot_delivered_bytes, plot_loss_bursts, plot_record_latency_boxes
from transportlab.scenario import ScenarioError

MS = 1_000_000

# --- VoIP ------------------------------------------------------------------------------

# 12 frames (ids 0..11), one every 20 ms from t = 1000 ms. Latency (ms) per id; None =
# never delivered. Frame 7 is exactly 200 ms, frame 8 exactly 150 ms (on time = played).
VOIP_LAT = [60, 70, 155, 210, 199, None, 80, 200, 150, None, None, 90]
# The sender's write lateness (ms) past each frame's deadline: frame 6 is on time.
LATENESS = [0.5, 0.2, 0.1, 0.3, 0.4, 0.0, 0.0, 0.2, 0.3, 0.0, 0.0, 0.1]


def voip_series() -> pd.DataFrame:
    rows = []
    for i, (lat, late) in enumerate(zip(VOIP_LAT, LATENESS)):
        if lat is None:
            continue
        send = 1000 * MS + i * 20 * MS + int(late * MS)
        rows.append((i, 640, send, send + lat * MS))
    # A second copy of frame 3, later: only the first delivery counts.
    rows.append((3, 640, rows[3][2], rows[3][3] + 500 * MS))
    return pd.DataFrame(rows, columns=["id", "size", "send_ns", "deliver_ns"])


def test_frame_latencies_and_misses_by_hand():
    lat = M.frame_latencies(voip_series(), 12)
    assert np.isnan(lat[[5, 9, 10]]).all()
    assert list(lat[[0, 3, 7, 8]] / MS) == [60, 210, 200, 150]
    # 150 ms: 155, 210, 199, never, 200, never, never → ids 2, 3, 4, 5, 7, 9, 10.
    assert list(np.flatnonzero(M.playout_misses(lat, 150 * MS))) == [2, 3, 4, 5, 7, 9, 10]
    # 200 ms: 210 and the three never delivered → ids 3, 5, 9, 10 (7 at 200 is played).
    assert list(np.flatnonzero(M.playout_misses(lat, 200 * MS))) == [3, 5, 9, 10]
    # Rows past `sent` are ignored.
    assert len(M.frame_latencies(voip_series(), 4)) == 4


def test_loss_bursts_by_hand():
    assert list(M.loss_bursts(np.array([0, 0, 1, 1, 1, 1, 0, 1, 0, 1, 1, 0], bool))) == [4, 1, 2]
    assert list(M.loss_bursts(np.array([1, 1, 0, 1], bool))) == [2, 1]  # runs at both ends
    assert list(M.loss_bursts(np.array([1, 1, 1], bool))) == [3]
    assert len(M.loss_bursts(np.zeros(5, bool))) == 0
    assert len(M.loss_bursts(np.zeros(0, bool))) == 0


def test_voip_metrics_by_hand():
    series = voip_series()
    groups = np.array([0] * 6 + [1] * 6)
    m = M.voip_metrics(series, 12, [150 * MS, 200 * MS], groups=groups)
    assert (m["frames_sent"], m["frames_delivered"]) == (12, 9)
    # Delivered latencies 60, 70, 155, 210, 199, 80, 200, 150, 90: median 150.
    assert m["frame_latency_ms"]["p50"] == pytest.approx(150)
    p150, p200 = m["playout"]["150ms"], m["playout"]["200ms"]
    assert (p150["missed"], p150["bursts"], p150["longest_burst"], p150["burst_lengths"]) == (7, 3, 4, [4, 1, 2])
    assert p150["missed_share"] == pytest.approx(7 / 12)
    assert (p200["missed"], p200["bursts"], p200["longest_burst"], p200["burst_lengths"]) == (4, 3, 2, [1, 1, 2])
    # Frames 0-5 (no competing flow): 150 ms misses 2, 3, 4, 5 → one burst of 4;
    # frames 6-11: 7, 9, 10 → bursts 1 and 2. 200 ms: 3 and 5 (two bursts of 1); 9, 10.
    g = m["by_group"]
    assert (g["0"]["150ms"]["missed"], g["0"]["150ms"]["burst_lengths"]) == (4, [4])
    assert (g["1"]["150ms"]["missed"], g["1"]["150ms"]["burst_lengths"]) == (3, [1, 2])
    assert (g["0"]["200ms"]["missed"], g["0"]["200ms"]["burst_lengths"]) == (2, [1, 1])
    assert (g["1"]["200ms"]["missed"], g["1"]["200ms"]["longest_burst"]) == (2, 2)
    # Delivered latencies of frames 0-5: 60, 70, 155, 210, 199 → median 155; of 6-11: 80,
    # 200, 150, 90 → median (90 + 150) / 2 = 120.
    assert g["0"]["frame_latency_ms"]["p50"] == pytest.approx(155)
    assert g["1"]["frame_latency_ms"]["p50"] == pytest.approx(120)
    # Nothing delivered: every frame sent misses, one burst of all of them.
    empty = M.voip_metrics(series.iloc[0:0], 5, [150 * MS])
    assert empty["playout"]["150ms"]["burst_lengths"] == [5] and empty["frame_latency_ms"] is None


def test_frame_send_times_and_competing_counts_by_hand():
    # s0 = min(send − id·20 ms) = 1000 ms (frame 6 was written on its deadline).
    t = M.frame_send_times(voip_series(), 12, 20 * MS)
    assert t[0] == 1000 * MS and t[11] == 1220 * MS
    assert M.frame_send_times(voip_series().iloc[0:0], 3, 20 * MS) is None
    others = [(60.0, 300.0), (120.0, 300.0)]
    got = M.competing_counts(np.array([0.0, 59.99, 60.0, 119.0, 120.0, 299.9, 300.0]), others)
    assert list(got) == [0, 0, 1, 1, 2, 2, 0]


# --- streaming, CPU, delivered bytes ------------------------------------------------


def test_streaming_efficiency_and_retransmission_rate_by_hand():
    s = pd.DataFrame(
        {
            "id": [0, 1, 2, 1],
            "size": [1000, 1000, 1000, 1000],
            "send_ns": [0, 1, 2, 1],
            "deliver_ns": [1500 * MS, 2000 * MS, 3000 * MS, 3500 * MS],
        }
    )
    # Three distinct records of 1000 bytes, flow start at 1 s, last first delivery at 3 s
    # (the second copy of id 1 at 3.5 s does not count): 3000·8 / 2 s = 12 000 bit/s.
    assert M.records_goodput_bps(s, 1000 * MS) == 12_000
    assert M.records_goodput_bps(s.iloc[0:0], 0) == 0.0
    assert M.records_goodput_bps(s, 3000 * MS) is None
    # 750 kbit/s of goodput through a 1 Mbit/s bottleneck.
    assert M.bandwidth_efficiency(750_000, 1_000_000) == 0.75
    assert M.bandwidth_efficiency(None, 1_000_000) is None
    assert M.bandwidth_efficiency(750_000, None) is None
    # 5 of 200 segments were retransmissions.
    assert M.retransmission_rate(5, 200) == 0.025
    assert M.retransmission_rate(5, 0) is None
    assert M.retransmission_rate(None, 200) is None


def test_cpu_by_hand():
    client = {"cpu_user_s": 0.5, "cpu_sys_s": 0.25}
    server = {"cpu_user_s": 0.125, "cpu_sys_s": 0.625}
    c = cpu_seconds(client, server)
    assert c == {"client_user": 0.5, "client_sys": 0.25, "server_user": 0.125, "server_sys": 0.625, "total": 1.5}
    # Relative to raw TCP's 1.2 s: 1.5 / 1.2.
    assert M.cpu_ratio(c["total"], 1.2) == pytest.approx(1.25)
    assert M.cpu_ratio(1.5, 0.0) is None
    assert cpu_seconds(client, {})["total"] is None
    assert cpu_seconds({}, {}) is None


class _NoSeries:
    """A run whose agents wrote no series (the kinds' metrics then read summaries only)."""

    def series(self, stem):
        return None


def test_quic_and_udp_retransmission_rate_and_cpu_by_hand():
    from transportlab.kinds import kind

    cpu_client = {"cpu_user_s": 0.5, "cpu_sys_s": 0.25}
    cpu_server = {"cpu_user_s": 0.125, "cpu_sys_s": 0.625}
    # QUIC download: the server's connection sent 400 packets, 6 declared lost: 1.5 %.
    conn = {"quic": {"packets_sent": 400, "lost_packets": 6, "congestion_events": 2}}
    client = {"sender": "server", **cpu_client}
    server = {"connections": [conn], **cpu_server}
    q = kind("quic").metrics(_NoSeries(), {"name": "f"}, client, server)
    assert q["retransmission_rate"] == pytest.approx(0.015)
    assert q["lost_packets"] == 6
    assert q["cpu_s"]["total"] == 1.5
    # A connection that sent nothing has no rate (not 0).
    empty = {"connections": [{"quic": {"packets_sent": 0, "lost_packets": 0}}]}
    assert kind("quic").metrics(_NoSeries(), {"name": "f"}, client, empty)["retransmission_rate"] is None
    # UDP repairs nothing: no retransmission rate at all (its losses are loss_rate), and
    # both agents' CPU like the others'.
    u = kind("udp").metrics(_NoSeries(), {"name": "f", "delivery": None}, {"sent": 10, **cpu_client}, cpu_server)
    assert "retransmission_rate" not in u
    assert u["cpu_s"] == {
        "client_user": 0.5,
        "client_sys": 0.25,
        "server_user": 0.125,
        "server_sys": 0.625,
        "total": 1.5,
    }


def test_delivered_over_time_by_hand():
    s = pd.DataFrame(
        {"id": [0, 1, 2], "size": [100, 200, 50], "send_ns": [0, 0, 0], "deliver_ns": [500 * MS, 1200 * MS, 3700 * MS]}
    )
    d = M.delivered_over_time(s, 0, 1.0)
    # Bins ending at 1, 2, 3, 4 s: 100, 100 + 200, nothing more, + 50.
    assert list(d["t_s"]) == [1.0, 2.0, 3.0, 4.0]
    assert list(d["bytes"]) == [100, 300, 300, 350]


# --- scenario fields ---------------------------------------------------------------

LINK = {"name": "voice", "forward": 'delay = "30ms"', "reverse": 'delay = "30ms"'}


def load(tmp_path: Path, flow: str, protocol: str = "tcp"):
    return load_one_flow(tmp_path / "voip.toml", flow, protocol=protocol, **LINK)


def test_playout_reaches_the_plan(tmp_path):
    s = load(tmp_path, 'size = 640\ninterval = "20ms"\nplayout = ["150ms", "200ms"]')
    (flow,) = to_flows(s)
    assert flow.playout == (0.15, 0.2)


BAD = [
    ('size = 640\ninterval = "20ms"\nplayout = ["-5ms"]', "flows.voice.playout", "-5ms"),
    ('size = 640\ninterval = "20ms"\nplayout = []', "flows.voice.playout", "jitter buffers"),
    ('size = 640\ninterval = "20ms"\nplayout = ["150ms", "150ms"]', "flows.voice.playout", "150ms twice"),
    ('playout = ["150ms"]', "flows.voice.size", "size is missing"),
    ('size = 640\nplayout = ["150ms"]', "flows.voice.interval", "interval is missing"),
    ('size = 640\ninterval = "0ms"\nplayout = ["150ms"]', "flows.voice.interval", "0ms"),
]  # fmt: skip


@pytest.mark.parametrize("flow, path, value", BAD, ids=[b[1] + ":" + b[2] for b in BAD])
def test_bad_workload_fields_name_file_flow_field_and_value(tmp_path, flow, path, value):
    assert_refused(lambda: load(tmp_path, flow), path, value, tmp_path / "voip.toml")


@pytest.mark.parametrize("protocol", ["udp", "quic"])
def test_playout_needs_records(tmp_path, protocol):
    """Every kind carrying records takes playout, but only on records (delivery given)."""
    with pytest.raises(ScenarioError, match=r"flows\.\w+\.playout: playout applies to records: give delivery too"):
        load(tmp_path, 'size = 640\ninterval = "20ms"\nplayout = ["150ms"]', protocol)


# --- run plots -----------------------------------------------------------------------


def test_loss_burst_and_delivered_plots(tmp_path):
    d = make_run(tmp_path)
    rd = RunData.load(d)
    colors = Colors(list(rd.flows))
    # Neither plot applies to a bulk run without records.
    assert not plot_loss_bursts(rd, tmp_path, colors).applies
    assert not plot_delivered_bytes(rd, tmp_path, colors).applies
    assert not plot_record_latency_boxes(rd, tmp_path, colors).applies

    series = voip_series()
    metrics = json.loads((d / "metrics.json").read_text())
    metrics["flows"]["bulk"]["voip"] = M.voip_metrics(series, 12, [150 * MS, 200 * MS])
    (d / "metrics.json").write_text(json.dumps(metrics))
    send = series["send_ns"].to_numpy() + T0
    _write_arrow(
        d / "raw" / "bulk-client-records.arrow",
        {
            "id": pa.array(series["id"], pa.uint64()),
            "size": pa.array(series["size"], pa.uint32()),
            "send_ns": pa.array(send, pa.int64()),
            "deliver_ns": pa.array(series["deliver_ns"].to_numpy() + T0, pa.int64()),
            "via": pa.array(["packet"] * len(series)),
            "stream_ns": pa.array(series["deliver_ns"].to_numpy() + T0 + 40 * MS, pa.int64()),
        },
    )
    rd = RunData.load(d)
    bursts = plot_loss_bursts(rd, tmp_path, colors)
    assert bursts.skipped is None and bursts.path.is_file()
    delivered = plot_delivered_bytes(rd, tmp_path, colors)
    assert delivered.skipped is None and delivered.path.is_file()
    boxes = plot_record_latency_boxes(rd, tmp_path, colors)
    assert boxes.skipped is None and boxes.path.is_file()
    plt.close("all")
