"""Metrics on small hand-made packet logs, with the expected answers computed by hand in
the comments, plus one run over 10 million synthetic records (no timing assertion)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from transportlab import metrics as M
from transportlab.artefacts import packetlog as PL
from transportlab.metrics import Flow

MS = 1_000_000  # ns

DATA = Flow.of("10.0.0.1", "10.0.0.2", 40000, 5001, "tcp")
ACK = DATA.reverse()
OTHER = Flow.of("10.0.0.3", "10.0.0.2", 40001, 5001, "tcp")
UDP = Flow.of("10.0.0.1", "10.0.0.2", 7000, 7001, "udp")


def r(t_ns, pid, event, direction=0, size=1500, flow=DATA, reason=0, flags=0, seq=0, payload=None):
    """A record; `payload` (the transport payload length) defaults to what a Linux TCP
    segment of `size` bytes carries: size − 52 (IPv4 20 + TCP 32 with timestamps)."""
    return (
        int(t_ns),
        pid,
        flow.src,
        flow.dst,
        flow.sport,
        flow.dport,
        size,
        direction,
        flow.proto,
        event,
        reason,
        flags,
        seq,
        0,  # t_actual_ns: a hand-made row has no real time (the metrics use t_ns)
        max(size - 52, 0) if payload is None else payload,
    )


def log(tmp_path, rows, name="packets.tlog"):
    """Writes the rows with PL.write_records and reads them back (memory-mapped), so every
    test goes through the real file format."""
    path = tmp_path / name
    PL.write_records(path, np.array([tuple(r) + (0,) * (len(PL.RECORD.names) - len(r)) for r in rows], dtype=PL.RECORD))
    return PL.read_records(path)


# --- flows -------------------------------------------------------------------------


def test_flow_identity_reverse_and_path(tmp_path):
    rows = [
        # packet 1 of DATA crosses direction 2 then direction 0 (path order ≠ index order)
        r(0, 1, PL.ARRIVAL, 2),
        r(1 * MS, 1, PL.DEPARTURE, 2),
        r(1 * MS, 1, PL.ARRIVAL, 0),
        r(2 * MS, 1, PL.DEPARTURE, 0),
        # its ack goes back over direction 1 then 3
        r(3 * MS, 2, PL.ARRIVAL, 1, 52, ACK),
        r(4 * MS, 2, PL.DEPARTURE, 1, 52, ACK),
        r(4 * MS, 2, PL.ARRIVAL, 3, 52, ACK),
        r(5 * MS, 2, PL.DEPARTURE, 3, 52, ACK),
    ]
    recs = log(tmp_path, rows)
    assert str(DATA) == "10.0.0.1:40000>10.0.0.2:5001/tcp"
    assert Flow.of("10.0.0.2", "10.0.0.1", 5001, 40000, 6) == ACK
    table = M.flows(recs)
    assert list(table["flow"]) == [DATA, ACK]
    assert list(table["records"]) == [4, 4]
    assert list(table["first_ns"]) == [0, 3 * MS] and list(table["last_ns"]) == [2 * MS, 5 * MS]
    assert M.flow_path(recs, DATA) == (2, 0)
    assert M.flow_path(recs, ACK) == (1, 3)
    sel = M.select(recs, ACK, direction=3, event=PL.DEPARTURE)
    assert len(sel) == 1 and int(np.asarray(sel["t_ns"])[0]) == 5 * MS
    assert len(M.select(recs, direction=0)) == 2


# --- throughput ----------------------------------------------------------------------


def test_throughput_bins_aligned_to_origin(tmp_path):
    rows = [
        r(4 * MS, 1, PL.DEPARTURE),  # before the origin (5 ms): ignored
        # bin 0 = [5, 15) ms: 3 packets of 1500 B → 3·1500·8 bit / 0.010 s = 3 600 000 bit/s
        r(5 * MS, 2, PL.DEPARTURE),
        r(9 * MS, 3, PL.DEPARTURE),
        r(15 * MS - 1, 4, PL.DEPARTURE),
        # bin 1 = [15, 25) ms: empty → 0
        # bin 2 = [25, 35) ms: one 1000 B packet → 1000·8 / 0.010 = 800 000 bit/s
        r(25 * MS, 5, PL.DEPARTURE, size=1000),
        r(26 * MS, 6, PL.ARRIVAL),  # an arrival: not counted
        r(27 * MS, 7, PL.DEPARTURE, direction=1),  # another direction: not counted
        r(28 * MS, 8, PL.DEPARTURE, flow=OTHER),  # another flow
    ]
    recs = log(tmp_path, rows)
    tp = M.throughput(recs, DATA, direction=0, bin_ns=10 * MS, origin_ns=5 * MS)
    assert list(tp["t_ns"]) == [5 * MS, 15 * MS, 25 * MS]
    assert list(tp["bytes"]) == [4500, 0, 1000]
    assert list(tp["bps"]) == [3_600_000.0, 0.0, 800_000.0]
    # with an end: bins up to ceil((45 − 5)/10) = 4
    assert len(M.throughput(recs, DATA, 0, 10 * MS, 5 * MS, end_ns=45 * MS)) == 4

    wide = M.throughput_by_flow(recs, 0, 10 * MS, 5 * MS, flows={"a": DATA, "b": OTHER, "u": UDP})
    assert list(wide.columns) == ["a", "b", "u"]
    assert list(wide.index) == [5 * MS, 15 * MS, 25 * MS]
    assert list(wide["a"]) == [3_600_000.0, 0.0, 800_000.0]
    assert list(wide["b"]) == [0.0, 0.0, 1_200_000.0]  # 1500·8/0.010
    assert list(wide["u"]) == [0.0, 0.0, 0.0]
    auto = M.throughput_by_flow(PL.read_frame(tmp_path / "packets.tlog"), 0, 10 * MS, 5 * MS)
    assert list(auto.columns) == [str(DATA), str(OTHER)]
    assert list(auto[str(DATA)]) == list(wide["a"])


# --- delivery, goodput, utilisation, byte difference --------------------------------


def test_bytes_delivered_goodput_utilisation_and_byte_difference(tmp_path):
    rows = []
    # DATA: path 0 → 1; 4 packets of 1500 B leave direction 1 at 1, 2, 3, 12 ms
    for i, t in enumerate([1, 2, 3, 12]):
        rows += [
            r(t * MS - 500_000, i, PL.ARRIVAL, 0),
            r(t * MS - 400_000, i, PL.DEPARTURE, 0),
            r(t * MS - 400_000, i, PL.ARRIVAL, 1),
            r(t * MS, i, PL.DEPARTURE, 1),
        ]
    # OTHER: one 1000 B packet leaves direction 1 at 5 ms
    rows += [r(5 * MS - 1, 10, PL.ARRIVAL, 1, 1000, OTHER), r(5 * MS, 10, PL.DEPARTURE, 1, 1000, OTHER)]
    recs = log(tmp_path, rows)
    # window [0, 10) ms at the last direction (1): 3 × 1500 = 4500 B
    assert M.bytes_delivered(recs, DATA, 0, 10 * MS) == 4500
    assert M.bytes_delivered(recs, DATA) == 6000
    assert M.bytes_delivered(recs, DATA, 0, 10 * MS, direction=0) == 4500
    assert M.bytes_delivered(recs, UDP) == 0
    # |4500 − 1000| = 3500 B
    assert M.pairwise_byte_difference(recs, DATA, OTHER, 0, 10 * MS) == 3500
    assert M.byte_difference(4500, 1000) == 3500
    # utilisation of direction 1 over [0, 10) ms at 10 Mbit/s: (4500+1000)·8 = 44 000 bit
    # / (10e6 bit/s × 0.010 s = 100 000 bit) = 0.44
    assert M.link_utilisation(recs, 1, 10e6, 0, 10 * MS) == pytest.approx(0.44)
    assert M.utilisation(60_000, 10e6, 0.01) == pytest.approx(0.6)
    # goodput: 10 000 000 B in 8 s (start before the handshake) = 80e6 bit / 8 s = 10 Mbit/s
    assert M.goodput(10_000_000, 1_000_000_000, 9_000_000_000) == pytest.approx(10e6)
    with pytest.raises(ValueError):
        M.goodput(1, 5, 5)


# --- delays --------------------------------------------------------------------------


def test_sojourn_one_way_and_queueing_delay_with_a_duplicate(tmp_path):
    rows = [
        # packet 1: dir 0 arrival 0, departs 6.2 ms; duplicated at dir 0: copy departs 7.4 ms
        r(0, 1, PL.ARRIVAL, 0),
        r(6_200_000, 1, PL.DEPARTURE, 0),
        r(7_400_000, 1, PL.DEPARTURE, 0, flags=1),
        # dir 1: the original and the copy arrive, depart 1 ms later
        r(6_200_000, 1, PL.ARRIVAL, 1),
        r(7_400_000, 1, PL.ARRIVAL, 1, flags=1),
        r(7_200_000, 1, PL.DEPARTURE, 1),
        r(8_400_000, 1, PL.DEPARTURE, 1, flags=1),
        # packet 2 arrives at 1 ms, departs dir 0 at 10 ms (queued behind), dir 1 at 11 ms
        r(1 * MS, 2, PL.ARRIVAL, 0),
        r(10 * MS, 2, PL.DEPARTURE, 0),
        r(10 * MS, 2, PL.ARRIVAL, 1),
        r(11 * MS, 2, PL.DEPARTURE, 1),
        # packet 3 dropped at dir 0: no delay
        r(2 * MS, 3, PL.ARRIVAL, 0),
        r(2 * MS, 3, PL.DROP, 0, reason=1),
        # packet 4 of another flow, 500 B: 0.4 ms serialisation + 5 ms at dir 0
        r(3 * MS, 4, PL.ARRIVAL, 0, 500, OTHER),
        r(8_400_000, 4, PL.DEPARTURE, 0, 500, OTHER),
    ]
    recs = log(tmp_path, rows)
    s = M.sojourn(recs, 0, DATA)
    # sorted by departure: p1 6.2 ms, copy of p1 7.4 − 0 (its original's arrival), p2 10 − 1 = 9 ms
    assert list(s["packet_id"]) == [1, 1, 2]
    assert list(s["copy"]) == [False, True, False]
    assert list(s["delay_ns"]) == [6_200_000, 7_400_000, 9_000_000]
    assert list(M.sojourn(recs, 1, DATA)["delay_ns"]) == [1 * MS, 1 * MS, 1 * MS]
    owd = M.one_way_delay(recs, DATA)  # path inferred: (0, 1)
    # p1: 7.2 − 0; copy: 8.4 − 0; p2: 11 − 1 = 10 ms
    assert list(owd["delay_ns"]) == [7_200_000, 8_400_000, 10 * MS]
    assert list(owd["arrival_ns"]) == [0, 0, 1 * MS]
    # queueing with the configured rate 10 Mbit/s and delay 5 ms: minimum for 1500 B =
    # 1500·8/10e6 = 1.2 ms + 5 ms = 6.2 ms → p1: 0, copy: 1.2 ms, p2: 9 − 6.2 = 2.8 ms
    q = M.queueing_delay(recs, 0, DATA, rate_bps=10e6, fixed_delay_ns=5 * MS)
    assert q["queueing_ns"].to_numpy() == pytest.approx([0, 1_200_000, 2_800_000])
    # OTHER (500 B): 5.4 − (0.4 + 5) = 0
    assert M.queueing_delay(recs, 0, OTHER, rate_bps=10e6, fixed_delay_ns=5 * MS)[
        "queueing_ns"
    ].tolist() == pytest.approx([0])
    # without parameters: minus the min sojourn of the same size at dir 0 (1500 B: 6.2 ms;
    # 500 B: 5.4 ms, its only packet)
    q2 = M.queueing_delay(recs, 0)
    assert q2["queueing_ns"].tolist() == pytest.approx([0, 1_200_000, 0, 2_800_000])


# --- jitter --------------------------------------------------------------------------


def test_rfc3550_jitter_step_by_step():
    transit = [10.0, 12.0, 11.0, 15.0]  # ms
    # D = 2, 1, 4 (absolute transit differences)
    # J1 = 0 + (2 − 0)/16 = 0.125
    # J2 = 0.125 + (1 − 0.125)/16 = 0.125 + 0.0546875 = 0.1796875
    # J3 = 0.1796875 + (4 − 0.1796875)/16 = 0.1796875 + 0.23876953125 = 0.41845703125
    j = M.jitter_rfc3550_series(transit)
    assert j.tolist() == pytest.approx([0.0, 0.125, 0.1796875, 0.41845703125], rel=1e-12)
    assert M.jitter_rfc3550(transit) == pytest.approx(0.41845703125, rel=1e-12)
    # a lost packet (NaN) is skipped: same as the series without it
    assert M.jitter_rfc3550([10.0, np.nan, 12.0, 11.0, 15.0]) == pytest.approx(0.41845703125, rel=1e-12)
    assert M.jitter_rfc3550([5.0]) == 0.0


def test_rfc3550_blocked_evaluation_matches_the_recursion():
    rng = np.random.default_rng(1)
    transit = rng.exponential(2_000_000.0, size=10_001)  # crosses two 4096-blocks
    j, ref = 0.0, [0.0]
    for i in range(1, len(transit)):
        j += (abs(transit[i] - transit[i - 1]) - j) / 16
        ref.append(j)
    assert M.jitter_rfc3550_series(transit) == pytest.approx(np.array(ref), rel=1e-9)


def test_rfc3393_ipdv_mean_absolute():
    # [10, 12, 11, 15] ms → |2| + |−1| + |4| over 3 pairs = 7/3 ms
    assert M.ipdv_rfc3393([10, 12, 11, 15]) == pytest.approx(7 / 3)
    assert M.ipdv_rfc3393_series([10, 12, 11, 15]).tolist() == [2, -1, 4]
    # a lost packet: the pair spans it → [10, 11, 15]: (1 + 4)/2
    assert M.ipdv_rfc3393([10, np.nan, 11, 15]) == pytest.approx(2.5)
    assert math.isnan(M.ipdv_rfc3393([10]))


# --- loss ----------------------------------------------------------------------------


def test_loss_per_flow_per_direction_by_reason_and_unintended(tmp_path):
    rows = []
    # DATA, path 0 → 1: 10 packets offered at direction 0
    for i in range(10):
        rows.append(r(i * MS, i, PL.ARRIVAL, 0))
    rows += [
        r(0, 0, PL.DROP, 0, reason=1),
        r(MS, 1, PL.DROP, 0, reason=1),
        r(2 * MS, 2, PL.DROP, 0, reason=2),
    ]  # 2 queue full, 1 random
    for i in range(3, 10):
        rows += [r(i * MS + 1, i, PL.DEPARTURE, 0), r(i * MS + 1, i, PL.ARRIVAL, 1)]
    rows.append(r(3 * MS + 2, 3, PL.DROP, 1, reason=2))  # random loss on dir 1
    rows += [r(i * MS + 2, i, PL.DEPARTURE, 1) for i in range(4, 10)]
    rows.append(r(9 * MS + 3, 9, PL.DROP, PL.NO_DIRECTION, reason=11))  # write to the host failed
    rows.append(r(10 * MS, 20, PL.DROP, PL.NO_DIRECTION, reason=10))  # no route (pre-link)
    rows.append(r(10 * MS, 21, PL.DROP, PL.NO_DIRECTION, 60, Flow(0, 0, 0, 0, 0), reason=12))  # not IPv4
    rows.append(r(11 * MS, 22, PL.ARRIVAL, 0, flow=OTHER))
    rows.append(r(11 * MS, 22, PL.DEPARTURE, 0, flow=OTHER))
    recs = log(tmp_path, rows)

    # unintended: reasons 11, 10, 12 → 3
    assert M.unintended_drops(recs) == 3
    fl = M.flow_loss(recs, DATA)
    # offered = 10 arrivals at dir 0 + 1 no-route drop = 11; dropped = 2 + 1 + 1 + 1 (TUN) + 1 (no route) = 6
    assert fl["offered"] == 11 and fl["dropped"] == 6
    assert fl["loss_rate"] == pytest.approx(6 / 11)
    assert fl["by_reason"] == {"queue_full": 2, "random_loss": 2, "no_route": 1, "host_write_failed": 1}
    bd = fl["by_direction"]
    assert bd.values.tolist() == [
        [0, 1, "queue_full", 2],
        [0, 2, "random_loss", 1],
        [1, 2, "random_loss", 1],
        [PL.NO_DIRECTION, 10, "no_route", 1],
        [PL.NO_DIRECTION, 11, "host_write_failed", 1],
    ]
    links = M.link_loss(recs)
    assert list(links.index) == [0, 1]
    # dir 0: 10 + 1 (OTHER) arrivals, 7 + 1 departures, 3 drops → 3/11
    assert links.loc[0, ["arrivals", "departures", "drops", "queue_full", "random_loss"]].tolist() == [11, 8, 3, 2, 1]
    assert links.loc[0, "loss_rate"] == pytest.approx(3 / 11)
    # dir 1: 7 arrivals, 6 departures, 1 random loss → 1/7
    assert links.loc[1, ["arrivals", "departures", "drops", "queue_full", "random_loss"]].tolist() == [7, 6, 1, 0, 1]
    assert links.loc[1, "loss_rate"] == pytest.approx(1 / 7)
    assert M.flow_loss(recs, OTHER)["loss_rate"] == 0.0


def test_marks_per_flow_and_per_direction_count_ce_marked_departures(tmp_path):
    """Flow DATA: 4 packets over directions 0 → 1; direction 0 marks packets 1 and 2,
    direction 1 marks packet 3 (and a duplicate copy of packet 3, marked on its own);
    OTHER: one unmarked packet. Marks: DATA 4 (1, 2, 3, copy of 3), OTHER 0; direction 0
    has 2, direction 1 has 2. A plain duplicate-copy flag (1) alone is not a mark."""
    ce, copy = PL.FLAG_CE_MARKED, PL.FLAG_COPY
    rows = []
    for i in range(4):
        rows += [r(i * MS, i, PL.ARRIVAL, 0), r(i * MS + 1, i, PL.DEPARTURE, 0, flags=ce if i in (1, 2) else 0)]
        rows += [r(i * MS + 1, i, PL.ARRIVAL, 1), r(i * MS + 2, i, PL.DEPARTURE, 1, flags=ce if i == 3 else 0)]
    rows += [r(3 * MS + 1, 3, PL.ARRIVAL, 1, flags=copy), r(3 * MS + 3, 3, PL.DEPARTURE, 1, flags=copy | ce)]
    rows += [r(5 * MS, 9, PL.ARRIVAL, 0, flow=OTHER), r(5 * MS + 1, 9, PL.DEPARTURE, 0, flow=OTHER, flags=copy)]
    recs = log(tmp_path, rows)
    assert M.flow_loss(recs, DATA)["marks"] == 4
    assert M.flow_loss(recs, OTHER)["marks"] == 0
    assert M.link_loss(recs)["marks"].tolist() == [2, 2]


# --- retransmissions -----------------------------------------------------------------


def test_retransmission_detected_from_sequence_numbers(tmp_path):
    # data segments of 1500 B (1448 B payload + 52 B headers) at direction 0, and one of
    # 64 B whose 44-byte header (SACK blocks) leaves 20 B of payload
    rows = [
        r(0, 1, PL.ARRIVAL, 0, 1500, seq=1000),
        r(1 * MS, 2, PL.ARRIVAL, 0, 52, ACK, seq=7),  # ack flow: other flow anyway
        r(1 * MS, 3, PL.ARRIVAL, 0, 52, seq=2448),  # pure ack of DATA (no payload): ignored
        r(2 * MS, 4, PL.ARRIVAL, 0, 1500, seq=2448),
        r(3 * MS, 5, PL.ARRIVAL, 0, 1500, seq=3896),
        r(3 * MS, 5, PL.ARRIVAL, 0, 1500, seq=3896, flags=1),  # a duplicate copy: not a retransmission
        r(4 * MS, 6, PL.ARRIVAL, 0, 1500, seq=2448),  # ← retransmission of the 2nd segment
        r(5 * MS, 7, PL.ARRIVAL, 0, 1500, seq=5344),
        r(5 * MS, 9, PL.ARRIVAL, 0, 64, seq=6772, payload=20),  # ← resends the last 20 B of the one before
        r(5 * MS, 10, PL.ARRIVAL, 0, 64, seq=6792, payload=0),  # a pure ACK with SACK blocks: ignored
        r(6 * MS, 8, PL.DEPARTURE, 0, 1500, seq=1000),  # a departure, other event: ignored
    ]
    recs = log(tmp_path, rows)
    retx = M.retransmissions_from_log(recs, DATA, 0)
    assert retx["packet_id"].tolist() == [6, 9]
    assert retx["tcp_seq"].tolist() == [2448, 6772] and retx["t_ns"].tolist() == [4 * MS, 5 * MS]
    assert M.count_retransmissions_from_log(recs, DATA, 0) == 2


def test_retransmission_across_sequence_wraparound(tmp_path):
    top = 2**32 - 1000
    rows = [
        r(0, 1, PL.ARRIVAL, seq=top),  # covers top .. top+1447 (wraps)
        r(1, 2, PL.ARRIVAL, seq=(top + 1448) % 2**32),  # = 448
        r(2, 3, PL.ARRIVAL, seq=top),  # retransmission across the wrap
    ]
    recs = log(tmp_path, rows)
    assert M.unwrap_seq([top, 448]).tolist() == [top, 2**32 + 448]
    assert M.retransmissions_from_log(recs, DATA, 0)["packet_id"].tolist() == [3]


def test_retransmissions_from_tcp_info():
    info = pd.DataFrame({"t_ns": [0, 1, 2, 3, 4], "total_retrans": [0, 0, 2, 5, 5], "cwnd_bytes": [1] * 5})
    assert M.retransmissions_from_tcp_info(info) == 5
    # window [2, 3]: value at t=3 (5) − value at the last sample before 2 (t=1: 0) = 5
    assert M.retransmissions_from_tcp_info(info, 2, 3) == 5
    # window [3, 4]: 5 − 2 = 3
    assert M.retransmissions_from_tcp_info(info, 3, 4) == 3


# --- fairness ------------------------------------------------------------------------


def test_jain_index():
    assert M.jain_index([1, 1]) == 1.0  # (2)²/(2·2) = 1
    assert M.jain_index([1, 0]) == 0.5  # 1/(2·1)
    assert M.jain_index([3, 1]) == pytest.approx(0.8)  # 16/(2·10) = 16/20
    assert M.jain_index([5, 5, 5, 5]) == 1.0
    assert math.isnan(M.jain_index([])) and math.isnan(M.jain_index([0, 0]))
    with pytest.raises(ValueError):
        M.jain_index([1, -1])


# --- convergence ---------------------------------------------------------------------


def _rates(a, b, bin_ns=100 * MS):
    return pd.DataFrame({"a": a, "b": b}, index=pd.Index(np.arange(len(a)) * bin_ns, name="t_ns"))


def test_crossing_time():
    # bins start at 0, 100, 200, ... ms; b joins at 150 ms, so bins from 200 ms count
    # d = a − b: 200 ms: 9−1 = 8 > 0, 300: 7−3 > 0, 400: 4−6 < 0 ← sign change
    rates = _rates([10, 10, 9, 7, 4, 5], [0, 0, 1, 3, 6, 5])
    assert M.crossing_time(rates, 150 * MS) == 400 * MS - 150 * MS
    # equality counts: 500 ms is d = 0, the first hit when starting at 450 ms
    assert M.crossing_time(rates, 450 * MS) == 50 * MS
    assert M.crossing_time(_rates([3, 3, 3], [1, 2, 2]), 0) is None
    # the bin before the join is not compared with the first bin after it:
    # d = [−1 | +1, +1]: join at 100 ms → no crossing
    assert M.crossing_time(_rates([0, 2, 2], [1, 1, 1]), 100 * MS) is None


def test_delta_fair_convergence():
    # δ = 0.1, hold 250 ms with 100 ms bins → m = ceil(2.5) = 3 bins in a row
    # fair share = per-bin mean: bin 1: (9+1)/2=5, |9−5| > 0.5 no; bin 2: (6,4) f=5, 1 > 0.5 no;
    # bin 3: (5.2, 4.8) f=5, 0.2 ≤ 0.5 yes; bin 4: (5,5) yes; bin 5: (4.6, 5.4) 0.4 ≤ 0.5 yes
    # bins 3, 4, 5 fair → converged at 300 ms; join at 100 ms → 200 ms
    rates = _rates([10, 9, 6, 5.2, 5, 4.6, 5], [0, 1, 4, 4.8, 5, 5.4, 5])
    assert M.delta_fair_convergence(rates, 100 * MS, 0.1, 250 * MS) == 200 * MS
    # hold 500 ms → 5 bins, only 4 fair bins (3..6) remain → never
    assert M.delta_fair_convergence(rates, 100 * MS, 0.1, 500 * MS) is None
    # a given fair share of 5.5 (e.g. capacity 11 / 2 flows), δ 0.1 → band [4.95, 6.05]:
    # bin 3: 4.8 out; bin 4: (5, 5) in; bin 5: 4.6 out; bin 6: (5, 5) in → hold 1 bin: 400 ms − 100
    assert M.delta_fair_convergence(rates, 100 * MS, 0.1, 100 * MS, fair_share=5.5) == 300 * MS
    assert M.delta_fair_convergence(rates, 100 * MS, 0.1, 200 * MS, fair_share=5.5) is None


# --- RTT and summaries ---------------------------------------------------------------


def test_rtt_stats_from_probes():
    probes = pd.DataFrame(
        {
            "seq": [0, 1, 2, 3, 4, 5],
            "send_ns": [0, 10, 20, 30, 40, 50],
            "rtt_ns": [10.0, 20.0, -1.0, 30.0, np.nan, 40.0],  # seq 2 and 4 lost
        }
    )
    s = M.rtt_stats(probes)
    assert (s["sent"], s["received"], s["lost"]) == (6, 4, 2)
    assert s["loss_rate"] == pytest.approx(2 / 6)
    # [10, 20, 30, 40]: mean 25, sample std sqrt((225+25+25+225)/3) = sqrt(500/3)
    assert s["mean_ns"] == 25 and s["min_ns"] == 10 and s["max_ns"] == 40
    assert s["std_ns"] == pytest.approx(math.sqrt(500 / 3))
    # p50 = 25; p95: rank 0.95·3 = 2.85 → 30 + 0.85·10 = 38.5; p99: 2.97 → 39.7
    assert s["p50_ns"] == 25 and s["p95_ns"] == pytest.approx(38.5) and s["p99_ns"] == pytest.approx(39.7)


def test_summarize():
    s = M.summarize(np.arange(1, 101, dtype=float))  # 1..100
    # mean 50.5; p50 = 50.5; p95: rank 0.95·99 = 94.05 → 95.05; p99: 98.01 → 99.01
    assert s["count"] == 100 and s["mean"] == 50.5 and s["p50"] == 50.5
    assert s["p95"] == pytest.approx(95.05) and s["p99"] == pytest.approx(99.01)
    assert M.summarize([np.nan, 2.0])["count"] == 1
    assert M.summarize([])["count"] == 0


# --- scale ---------------------------------------------------------------------------


def test_ten_million_records(tmp_path):
    """5 million packets of two flows, each an arrival and a departure at direction 0:
    10 million records through the file, throughput, bytes delivered, sojourn and loss."""
    n_pkt = 5_000_000
    recs = np.zeros(2 * n_pkt, dtype=PL.RECORD)
    pid = np.arange(n_pkt, dtype=np.uint64)
    t_arr = pid * 2_000  # one packet every 2 µs
    size = (1000 + (pid % 2) * 500).astype(np.uint16)  # DATA 1000 B (even ids), OTHER 1500 B (odd)
    for half, event, t in (
        (slice(0, None, 2), PL.ARRIVAL, t_arr),
        (slice(1, None, 2), PL.DEPARTURE, t_arr + 1_000_000),
    ):
        v = recs[half]
        v["t_ns"], v["packet_id"], v["size"], v["event"], v["proto"] = t, pid, size, event, 6
        v["src"] = np.where(pid % 2 == 0, DATA.src, OTHER.src)
        v["dst"], v["sport"], v["dport"] = DATA.dst, np.where(pid % 2 == 0, DATA.sport, OTHER.sport), DATA.dport
    path = tmp_path / "big.tlog"
    PL.write_records(path, recs)
    del recs
    big = PL.read_records(path)
    assert len(big) == 10_000_000
    wide = M.throughput_by_flow(big, 0, 100 * MS, 0)
    # each flow: 2.5e6 packets; DATA 2.5e9 B, OTHER 3.75e9 B; bits = Σ bps × 0.1 s
    assert wide[str(DATA)].sum() * 0.1 == pytest.approx(2.5e9 * 8)
    assert wide[str(OTHER)].sum() * 0.1 == pytest.approx(3.75e9 * 8)
    assert M.bytes_delivered(big, OTHER) == 3_750_000_000
    s = M.sojourn(big, 0)
    assert len(s) == n_pkt and (s["delay_ns"] == 1_000_000).all()
    assert M.link_loss(big).loc[0, "arrivals"] == n_pkt
    assert M.unintended_drops(big) == 0


# --- a probe's hops ------------------------------------------------------------------


def test_probe_hops_split_each_one_way_trip(tmp_path):
    """Two probes through a one-direction-each-way network: the sender's stack to the
    engine's arrival stamp, the hand-over lateness, and the hand-over to the agent's read,
    medians computed by hand."""
    probe = Flow.of("10.0.0.1", "10.0.0.2", 40000, 7000, "udp")
    echo = probe.reverse()
    ACTUAL = PL.RECORD.names.index("t_actual_ns")

    def rec(t, pid, event, direction, flow, actual):
        row = list(r(t, pid, event, direction, 64, flow))
        row[ACTUAL] = actual
        return tuple(row)

    rows = []
    # probe k: sent at S, stamped at S+20+k µs, due 10 ms later, handed over 3+k µs late,
    # read by the echo 40+2k µs after the hand-over; back the same with 30+k µs to the read.
    sends = [1_000 * MS, 1_100 * MS]
    for k, s in enumerate(sends):
        arr = s + (20 + k) * 1000
        due = arr + 10 * MS
        handed = due + (3 + k) * 1000
        rows += [rec(arr, 2 * k, PL.ARRIVAL, 0, probe, arr), rec(due, 2 * k, PL.DEPARTURE, 0, probe, handed)]
        echo_read = handed + (40 + 2 * k) * 1000
        back = echo_read + 25_000
        back_due = back + 10 * MS
        back_handed = back_due + (3 + k) * 1000
        rows += [
            rec(back, 2 * k + 1, PL.ARRIVAL, 1, echo, back),
            rec(back_due, 2 * k + 1, PL.DEPARTURE, 1, echo, back_handed),
        ]
    path = tmp_path / "p.tlog"
    PL.write_records(path, np.array(rows, dtype=PL.RECORD))
    recs = PL.read_records(path)
    handed_back = [rows[3][ACTUAL], rows[7][ACTUAL]]
    series = pd.DataFrame(
        {
            "send_ns": sends,
            "echo_ns": [rows[1][ACTUAL] + 40_000, rows[5][ACTUAL] + 42_000],
            "recv_ns": [handed_back[0] + 30_000, handed_back[1] + 31_000],
        }
    )
    hops = M.probe_hops(recs, series, 7000)
    assert hops == {
        "probes": 2,
        "stack_to_engine_us": 20.5,
        "handover_lateness_us": 3.5,
        "handover_to_read_us": 41.0,
        "handover_to_read_reverse_us": 30.5,
    }
    # A lost probe: packets and probes no longer pair up in order.
    lost = series.copy()
    lost.loc[1, ["recv_ns", "echo_ns"]] = np.nan
    assert M.probe_hops(recs, lost, 7000) is None
