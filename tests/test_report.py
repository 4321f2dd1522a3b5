"""The report layer on hand-made run directories: a packet log written with
`packetlog.write_records`, metrics.json/scenario.json as the runner writes them, and fake
agent series written with pyarrow.ipc."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.ipc
import pytest

from transportlab.artefacts.packetlog import ARRIVAL, DEPARTURE, DROP, RECORD, write_records
from transportlab.metrics import Flow
from transportlab.report import aggregate, render_run, render_sweep, sweep_table
from transportlab.report.rundata import RunData
from transportlab.run.record import numeric_values

MS = 1_000_000
T0 = 5_000 * 1_000_000_000  # CLOCK_MONOTONIC of scenario time 0
BULK = Flow.of("10.0.0.1", "10.0.0.2", 40000, 5201, "tcp")
CBR = Flow.of("10.0.0.1", "10.0.0.2", 7000, 7001, "udp")
RATE = 10e6
DELAY = 0.005
IMG = "data:image/png;base64,"


def _write_arrow(path: Path, columns: dict) -> None:
    table = pa.table(columns)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)


def _packet_log(path: Path, duration_s: float) -> None:
    """Two flows into a 10 Mbit/s, 5 ms, 40-packet drop-tail direction 0 (acks on 1):
    the TCP-like flow sends faster than the link (the queue builds, drops), the UDP
    flow sends 1 Mbit/s."""
    rng = np.random.default_rng(1)
    arrivals = []
    t, pid = 0.0, 0
    while t < duration_s * 0.9:  # bulk: 12 Mbit/s, 1500 B
        arrivals.append((t, BULK, 1500))
        t += 1500 * 8 / 12e6 * rng.uniform(0.8, 1.2)
    t = 0.0005
    while t < duration_s * 0.9:  # cbr: 1 Mbit/s, 1000 B
        arrivals.append((t, CBR, 1000))
        t += 1000 * 8 / 1e6
    arrivals.sort(key=lambda a: a[0])
    rows = []
    free, queue = 0.0, []  # time the link is free; departure times of queued packets
    for t, f, size in arrivals:
        pid += 1
        tn = T0 + int(t * 1e9)
        rows.append(
            (tn, pid, f.src, f.dst, f.sport, f.dport, size, 0, f.proto, ARRIVAL, 0, 0, pid if f.proto == 6 else 0)
        )
        queue = [d for d in queue if d > t]
        if len(queue) >= 40:
            rows.append((tn, pid, f.src, f.dst, f.sport, f.dport, size, 0, f.proto, DROP, 1, 0, 0))
            continue
        free = max(free, t) + size * 8 / RATE
        queue.append(free)
        dep = T0 + int((free + DELAY) * 1e9)
        rows.append((dep, pid, f.src, f.dst, f.sport, f.dport, size, 0, f.proto, DEPARTURE, 0, 0, 0))
        if f is BULK:  # its ack
            a = BULK.reverse()
            pid += 1
            rows.append((dep, pid, a.src, a.dst, a.sport, a.dport, 52, 1, 6, ARRIVAL, 0, 0, 0))
            rows.append((dep + 5 * MS, pid, a.src, a.dst, a.sport, a.dport, 52, 1, 6, DEPARTURE, 0, 0, 0))
    rows.sort(key=lambda r: r[0])
    # Version-2 records: a hand-made row has no real time (t_actual_ns 0: the metrics use t_ns).
    write_records(path, np.array([tuple(r) + (0,) * (len(RECORD.names) - len(r)) for r in rows], dtype=RECORD))


def _stats(mean):
    return {"mean": mean, "p50": mean * 0.9, "p95": mean * 1.5, "p99": mean * 2}


def make_run(
    root: Path,
    name: str = "run",
    *,
    point: str = "",
    values: dict | None = None,
    repetition: int = 0,
    throughput: float = 9e6,
    goodput: float | None = 8.5e6,
    unintended: int = 0,
    raw: bool = True,
) -> Path:
    d = root / name
    (d / "raw").mkdir(parents=True)
    duration = 2.0
    scenario = {
        "name": "demo",
        "description": "two flows into a shallow buffer",
        "duration_s": duration,
        "seed": 7,
        "scenario_seed": 7,
        "stop_when": "duration",
        "run_id": f"r{repetition}-{name}",
        "repetition": repetition,
        "point": {"label": point, "values": values or {}, "numeric": numeric_values(values or {})},
        "hosts": ["client", "server"],
        "addresses": {"client": "10.0.0.1", "server": "10.0.0.2"},
        "links": [
            {
                "name": "bottleneck",
                "between": ["client", "server"],
                "forward": {"rate": RATE, "delay": DELAY, "queue": {"packets": 40}},
                "reverse": {"delay": DELAY},
            }
        ],
        "flows": [
            {
                "name": "bulk",
                "protocol": "tcp",
                "cc": "cubic",
                "from": "client",
                "to": "server",
                "direction": "upload",
                "start_s": 0.0,
                "end_s": duration,
                "port": 5201,
            },
            {
                "name": "cbr",
                "protocol": "udp",
                "cc": None,
                "from": "client",
                "to": "server",
                "direction": "upload",
                "start_s": 0.0,
                "end_s": duration,
                "port": 7001,
                "rate": 1e6,
                "size": 1000,
            },
        ],
        "probes": [{"name": "probe0", "from": "client", "to": "server", "interval_s": 0.01}],
        "analysis": {"bin": 0.05},
    }
    flows = {
        "bulk": {
            "protocol": "tcp",
            "cc": "cubic",
            "from": "client",
            "to": "server",
            "direction": "upload",
            "bytes_delivered": 2_000_000,
            "throughput_bps": throughput,
            "goodput_bps": goodput,
            "completion_s": 1.9,
            "queueing_delay_ms": _stats(40.0),
            "rtt_ms": _stats(52.0),
            "loss_rate": 0.01,
            "retransmissions": 12 + repetition,
            "data": {"src": BULK.src, "dst": BULK.dst, "sport": 0, "dport": BULK.dport, "proto": 6},
            "path": [0],
            "bottleneck": 0,
        },
        "cbr": {
            "protocol": "udp",
            "cc": None,
            "from": "client",
            "to": "server",
            "direction": "upload",
            "bytes_delivered": 225_000,
            "throughput_bps": 0.9e6,
            "goodput_bps": None,
            "completion_s": None,
            "queueing_delay_ms": _stats(41.0),
            "rtt_ms": None,
            "loss_rate": 0.02,
            "retransmissions": None,
            "data": {"src": CBR.src, "dst": CBR.dst, "sport": CBR.sport, "dport": CBR.dport, "proto": 17},
            "path": [0],
            "bottleneck": 0,
        },
    }
    metrics = {
        "run": {
            "scenario": "demo",
            "point": point,
            "values": values or {},
            "numeric": numeric_values(values or {}),
            "repetition": repetition,
            "seed": 7 + repetition,
            "run_id": f"r{repetition}-{name}",
            "t0_ns": T0,
            "duration_s": duration,
        },
        "flows": flows,
        "probes": {
            "probe0": {
                "rtt_ms": {"mean": 30.0, "std": 9.0, "min": 10.1, "max": 60.0, "p50": 29.0, "p95": 50.0, "p99": 58.0},
                "sent": 200,
                "received": 198,
                "lost": 2,
            }
        },
        "links": {
            "bottleneck.forward": {
                "index": 0,
                "delivered_bits": 18_000_000,
                "utilisation": 0.9,
                "capacity_bps": RATE,
                "drops": {"queue_full": 30, "random_loss": 0},
            },
            "bottleneck.reverse": {
                "index": 1,
                "delivered_bits": 100_000,
                "utilisation": None,
                "capacity_bps": None,
                "drops": {"queue_full": 0, "random_loss": 0},
            },
        },
        "jain_index": 0.6 + 0.1 * repetition,
        "unintended_drops": unintended,
        "engine": {"handover_lateness": {"count": 5000, "mean_us": 1.5, "p50_us": 1.0, "p99_us": 4.0, "max_us": 30.0}},
    }
    (d / "scenario.json").write_text(json.dumps(scenario))
    (d / "metrics.json").write_text(json.dumps(metrics))
    if not raw:
        return d
    (d / "raw" / "engine.json").write_text(
        json.dumps({"directions": [{"name": "bottleneck.forward"}, {"name": "bottleneck.reverse"}]})
    )
    _packet_log(d / "raw" / "packets.tlog", duration)
    t = T0 + np.arange(0, int(duration * 1000), 10, dtype=np.int64) * MS
    saw = (np.arange(len(t)) % 50) / 50
    _write_arrow(
        d / "raw" / "bulk-client.arrow",
        {
            "conn": pa.array(np.zeros(len(t), dtype=np.uint32)),
            "t_ns": pa.array(t),
            "cwnd": pa.array((10 + 60 * saw).astype(np.uint32)),
            "cwnd_bytes": pa.array(((10 + 60 * saw) * 1448).astype(np.uint64)),
            "snd_mss": pa.array(np.full(len(t), 1448, dtype=np.uint32)),
            "srtt_us": pa.array((10_000 + 40_000 * saw).astype(np.uint32)),
        },
    )
    seq = np.arange(200, dtype=np.uint64)
    send = T0 + seq.astype(np.int64) * 10 * MS
    rtt = (10 + 40 * ((np.arange(200) % 50) / 50)) * MS
    rtt_arr = pa.array([None if i in (17, 120) else int(v) for i, v in enumerate(rtt)], type=pa.int64())
    recv_arr = pa.array(
        [None if i in (17, 120) else int(s + v) for i, (s, v) in enumerate(zip(send, rtt))], type=pa.int64()
    )
    _write_arrow(
        d / "raw" / "probe0.arrow",
        {"seq": pa.array(seq), "send_ns": pa.array(send), "recv_ns": recv_arr, "rtt_ns": rtt_arr},
    )
    return d


def _pngs(html: str) -> int:
    return html.count(IMG)


def test_render_run_writes_plots_and_report(tmp_path):
    run = make_run(tmp_path)
    report = render_run(run)
    assert report == run / "report.html"
    html = report.read_text()
    for name in ("bulk", "cbr", "probe0", "bottleneck.forward", "cubic"):
        assert name in html
    pngs = sorted(p.name for p in (run / "plots").glob("*.png"))
    assert pngs == [
        "cwnd.png",
        "delay_cdf.png",
        "interarrival.png",
        "queueing_delay.png",
        "rtt.png",
        "rtt_cdf.png",
        "throughput.png",
        "utilisation.png",
    ]
    assert _pngs(html) == 8
    assert "Plots not drawn" not in html
    assert "unintended drop" in html and 'class="banner bad"' not in html
    # every embedded image decodes to a PNG
    import base64

    for b64 in re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", html):
        assert base64.b64decode(b64)[:8] == b"\x89PNG\r\n\x1a\n"
    # self-contained: no external resources
    assert not re.search(r"(src|href)=\"https?://", html)
    # scenario shown as a table and as JSON; engine lateness shown
    assert "scenario.json (as run)" in html and "10 Mbit/s" in html and "1.5 µs" in html


def test_unintended_drop_banner(tmp_path):
    html = render_run(make_run(tmp_path, unintended=3)).read_text()
    assert 'class="banner bad"' in html
    assert "3 unintended drops" in html


def test_missing_optional_data_skips_plots(tmp_path):
    run = make_run(tmp_path, raw=False)
    html = render_run(run).read_text()
    assert _pngs(html) == 0
    assert "Plots not drawn" in html
    for title in (
        "Throughput over time",
        "Queueing delay at the bottleneck",
        "Round-trip time over time",
        "One-way delay distribution",
        "Congestion window over time",
    ):
        assert title in html
    assert "raw/packets.tlog is missing" in html
    assert "bulk" in html and "cbr" in html  # the summary tables are still there


def test_wildcard_port_resolves_to_the_log_flow(tmp_path):
    rd = RunData.load(make_run(tmp_path))
    assert rd.log_flows("bulk") == [BULK]  # sport 0 in metrics.json = any port
    assert rd.log_flows("cbr") == [CBR]
    assert rd.bin_s == 0.05
    assert rd.direction_name(0) == "bottleneck.forward"


def _sweep(tmp_path):
    # throughput per (point, repetition) for flow bulk
    tput = {("rate=10Mbit", 0): 8e6, ("rate=10Mbit", 1): 10e6, ("rate=20Mbit", 0): 15e6, ("rate=20Mbit", 1): 19e6}
    runs = []
    for (point, rep), v in tput.items():
        rate = point.split("=")[1]
        runs.append(
            make_run(
                tmp_path / "runs",
                f"{rate}-{rep}",
                point=point,
                values={"links.bottleneck.forward.rate": rate},
                repetition=rep,
                throughput=v,
                goodput=None if rep == 1 and rate == "20Mbit" else v * 0.9,
                raw=False,
            )
        )
    return runs


def test_sweep_table_one_row_per_run_and_flow(tmp_path):
    runs = _sweep(tmp_path)
    df = sweep_table(runs)
    assert len(df) == 4 * 2
    assert df.attrs["swept"] == ["links.bottleneck.forward.rate"]
    for col in (
        "point",
        "repetition",
        "links.bottleneck.forward.rate",
        "flow",
        "protocol",
        "cc",
        "throughput_bps",
        "goodput_bps",
        "completion_s",
        "queueing_delay_mean_ms",
        "rtt_mean_ms",
        "loss_rate",
        "retransmissions",
        "jain_index",
        "unintended_drops",
    ):
        assert col in df, col
    row = df[(df["point"] == "rate=20Mbit") & (df["repetition"] == 1) & (df["flow"] == "bulk")].iloc[0]
    assert row["throughput_bps"] == 19e6 and math.isnan(row["goodput_bps"]) and row["retransmissions"] == 13
    assert df[df["flow"] == "cbr"]["rtt_mean_ms"].isna().all()


def test_render_sweep_min_median_max(tmp_path):
    runs = _sweep(tmp_path)
    report = render_sweep(tmp_path / "sweep", runs)
    assert report == tmp_path / "sweep" / "report.html"
    html = report.read_text()

    agg = aggregate(sweep_table(runs)).set_index(["point", "flow"])
    a = agg.loc[("rate=10Mbit", "bulk")]
    # by hand: 8 and 10 Mbit/s → mean 9, sample std √2 Mbit/s, min 8, median 9, max 10
    assert (a["n"], a["throughput_bps_min"], a["throughput_bps_median"], a["throughput_bps_max"]) == (2, 8e6, 9e6, 10e6)
    assert a["throughput_bps_mean"] == 9e6 and a["throughput_bps_std"] == pytest.approx(math.sqrt(2) * 1e6)
    b = agg.loc[("rate=20Mbit", "bulk")]
    assert (b["throughput_bps_min"], b["throughput_bps_median"], b["throughput_bps_max"]) == (15e6, 17e6, 19e6)
    # goodput missing in one repetition: statistics over the one that has it
    assert b["goodput_bps_count"] == 1 and b["goodput_bps_median"] == 15e6 * 0.9 and math.isnan(b["goodput_bps_std"])
    # retransmissions 12 and 13 → median 12.5
    assert b["retransmissions_median"] == 12.5

    assert "8 Mbit/s / 9 Mbit/s / 10 Mbit/s" in html
    assert "15 Mbit/s / 17 Mbit/s / 19 Mbit/s" in html
    assert '9 Mbit/s<span class="std">(1.41 Mbit/s)</span>' in html
    # the mean (std) table and the min / median / max table
    assert html.count("<tr><td>rate=10Mbit</td><td><b>bulk</b>") == 2
    assert "0 unintended drops in all 4 runs" in html
    assert _pngs(html) >= 8  # metric plots + box plots
    assert (tmp_path / "sweep" / "plots" / "sweep_throughput_bps.png").is_file()
    assert (tmp_path / "sweep" / "plots" / "box_throughput_bps.png").is_file()


def test_sweep_banner_and_categorical_axis(tmp_path):
    runs = []
    for cc in ["reno", "cubic", "bbr"]:
        runs.append(
            make_run(
                tmp_path,
                f"{cc}",
                point=f"cc={cc}",
                values={"flows.bulk.cc": cc},
                unintended=1 if cc == "bbr" else 0,
                raw=False,
            )
        )
    html = render_sweep(tmp_path / "sweep", runs).read_text()
    assert 'class="banner bad"' in html and "1 of 3 runs" in html
    assert (tmp_path / "sweep" / "plots" / "sweep_throughput_bps.png").is_file()
    assert "one repetition per point" in html  # box plots skipped, and said so


def test_sweep_points_in_numeric_order(tmp_path):
    # passed in path order ("20Mbit" sorts before "5Mbit" as text): rows follow the rate
    runs = [
        make_run(
            tmp_path,
            f"{rate}-{rep}",
            point=f"rate={rate}",
            values={"links.bottleneck.forward.rate": rate},
            repetition=rep,
            raw=False,
        )
        for rate in ("20Mbit", "5Mbit")
        for rep in (1, 0)
    ]
    df = sweep_table(runs)
    assert list(df["point"].drop_duplicates()) == ["rate=5Mbit", "rate=20Mbit"]
    assert list(df[df["flow"] == "bulk"]["repetition"]) == [0, 1, 0, 1]
    html = render_sweep(tmp_path / "sweep", runs).read_text()
    assert html.index("<tr><td>rate=5Mbit</td>") < html.index("<tr><td>rate=20Mbit</td>")


def test_runner_forms_of_statistics(tmp_path):
    """The runner writes probe statistics in the agents' form ({"mean_ms": …}), the
    engine's lateness summary directly, and per-flow `window_limited`/`complete`."""
    run = make_run(tmp_path)
    m = json.loads((run / "metrics.json").read_text())
    m["probes"]["probe0"]["rtt_ms"] = {
        "count": 198,
        "mean_ms": 69.5,
        "std_ms": 9.6,
        "min_ms": 40.2,
        "max_ms": 156.0,
        "p50_ms": 69.6,
        "p95_ms": 78.8,
        "p99_ms": 79.7,
    }
    m["engine"] = {"count": 28157, "mean_us": 0.78, "p50_us": 1.0, "p99_us": 5.0, "max_us": 826.4}
    m["flows"]["bulk"].update(window_limited=True, complete=True)
    (run / "metrics.json").write_text(json.dumps(m))
    html = render_run(run).read_text()
    assert "69.5 ms" in html and "156 ms" in html
    assert "826 µs" in html
    assert "Window-limited: bulk" in html
    assert sweep_table([run]).set_index("flow").loc["bulk", "window_limited"] == True  # noqa: E712


def test_impossible_kernel_window_is_found_and_makes_the_run_untrusted(tmp_path):
    """A kernel TCP sender's TCP_INFO series (hand-made): the initial "infinite" ssthresh
    and ordinary windows pass; the first sample with a window or ssthresh of 2^25 segments
    or more is named, and a run with such a flow is not trusted and says why."""
    from transportlab.kinds.tcp import impossible_window
    from transportlab.report.html import run_validity

    t0 = 1_000_000_000
    series = pd.DataFrame(
        {
            "t_ns": [t0 + 10**8, t0 + 2 * 10**8, t0 + 13 * 10**9, t0 + 14 * 10**9],
            "cwnd": [10, 5, 721_775_368, 5],
            "ssthresh": [0x7FFFFFFF, 3, 0x81104110, 3],
        }
    )
    assert impossible_window(series, t0) == "ssthresh 0x81104110, cwnd 721775368 at 13.0 s"
    assert impossible_window(series.iloc[:2], t0) is None
    # Either value alone is enough; just below the bound is possible.
    wide = series.iloc[:2].assign(cwnd=[10, (1 << 25) - 1])
    assert impossible_window(wide, t0) is None
    assert impossible_window(wide.assign(cwnd=[10, 1 << 25]), t0) == f"ssthresh 0x3, cwnd {1 << 25} at 0.2 s"
    assert impossible_window(None, t0) is None

    run = make_run(tmp_path)
    assert run_validity(RunData(run)).trusted
    m = json.loads((run / "metrics.json").read_text())
    m["flows"]["bulk"]["impossible_window"] = impossible_window(series, t0)
    (run / "metrics.json").write_text(json.dumps(m))
    v = run_validity(RunData(run))
    assert not v.trusted and v.impossible_window == {"bulk": "ssthresh 0x81104110, cwnd 721775368 at 13.0 s"}
    html = render_run(run).read_text()
    assert "bulk: ssthresh 0x81104110, cwnd 721775368 at 13.0 s — no socket can have it" in html


def test_study_table_lays_out_rows_by_swept_value_and_columns_by_arm():
    from transportlab.report.study import fairness_tables, markdown, study_tables

    rows = []
    # 2 arms x 2 ratios x 2 repetitions; goodput in Mbit/s chosen so mean/std are exact.
    values = {("quic", "0%"): (10, 12), ("quic", "50%"): (30, 34), ("tcp", "0%"): (9, 9), ("tcp", "50%"): (20, 24)}
    for (arm, ratio), (g1, g2) in values.items():
        for rep, g in enumerate((g1, g2)):
            rows.append(
                {
                    "axis:arm": arm,
                    "axis:ratio": ratio,
                    "flow": "dl",
                    "run_dir": f"{arm}{ratio}{rep}",
                    "goodput_bps": g * 1e6,
                    "throughput_bps": g * 1e6,
                    "jain_index": None,
                }
            )
    df = pd.DataFrame(rows)
    ((title, t),) = study_tables(df)
    assert "goodput" in title
    assert list(t.columns) == ["quic", "tcp"] and list(t.index) == ["0%", "50%"]
    # mean (sample std): (10, 12) -> 11.00 (1.41); (30, 34) -> 32.00 (2.83); (9, 9) -> 9.00 (0.00)
    assert t.loc["0%", "quic"] == "11.00 (1.41)"
    assert t.loc["50%", "quic"] == "32.00 (2.83)"
    assert t.loc["0%", "tcp"] == "9.00 (0.00)"
    assert fairness_tables(df) == []  # one flow: no fairness table
    assert "| ratio | quic | tcp |" in markdown([(title, t)])


def test_fairness_table_has_each_flow_and_jain():
    from transportlab.report.study import fairness_tables

    rows = []
    for rep, (a, b, j) in enumerate(((10, 10, 1.0), (12, 8, 0.96))):
        for flow, v in (("dual", a), ("leg1", b)):
            rows.append(
                {
                    "axis:ratio": "50%",
                    "flow": flow,
                    "run_dir": f"r{rep}",
                    "throughput_bps": v * 1e6,
                    "goodput_bps": None,
                    "jain_index": j,
                }
            )
    ((title, t),) = fairness_tables(pd.DataFrame(rows))
    assert list(t.columns) == ["dual (Mbit/s)", "leg1 (Mbit/s)", "Jain's index"]
    assert t.loc["50%", "dual (Mbit/s)"] == "11.00 (1.41)"
    assert t.loc["50%", "Jain's index"] == "0.980 (0.028)"
