"""pcapng capture end to end: a run's `capture` table makes the engine write
raw/capture.pcapng, which tshark reads packet for packet as the packet log has them."""

import subprocess

import numpy as np
import pytest

from scenario_text import flow, link, scenario, table
from tlab_cli import run_one, tlab_ok
from transportlab.artefacts import packetlog, pcapng

pytestmark = pytest.mark.netns

SCENARIO = scenario(
    "capture",
    link(
        {"rate": "10Mbit", "delay": "5ms", "queue": {"packets": 100, "discipline": "codel", "ecn": True}},
        {"delay": "5ms"},
        name="ab",
        between=("a", "b"),
    ),
    table("sysctls.a", {"net.ipv4.tcp_ecn": 1}),
    flow("tcp", src="a", dst="b"),
    duration="3s",
    seed=2,
    hosts=["a", "b"],
    capture={"snaplen": 96},
)


def tshark(path, *fields: str) -> list[list[str]]:
    args = ["tshark", "-r", str(path), "-T", "fields", "-E", "separator=,"]
    for f in fields:
        args += ["-e", f]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return [line.split(",") for line in out.splitlines()]


def test_capture_holds_every_departure_of_the_direction_and_tshark_reads_it(tmp_path):
    """One interface per direction (every link direction by default), named after it;
    tshark reads as many packets per interface as the log has departures from that
    direction; on the data direction the same TCP sequence numbers in the same order, the
    same CE marks (ECN on the wire as the receiver got it), truncated to the snap length.
    `tlab pcap` lists and extracts one."""
    _, run_dir = run_one(tmp_path, SCENARIO)
    cap = run_dir / "raw" / "capture.pcapng"
    interfaces = pcapng.read(cap)
    assert [(i.name, i.snaplen, i.linktype) for i in interfaces] == [
        ("ab.forward", 96, 228),
        ("ab.reverse", 96, 228),
    ]

    recs = np.asarray(packetlog.read_records(run_dir / "raw" / "packets.tlog"))
    departures = {d: recs[(recs["event"] == packetlog.DEPARTURE) & (recs["direction"] == d)] for d in (0, 1)}
    per_interface = tshark(cap, "frame.interface_name")
    for d, itf in enumerate(interfaces):
        assert sum(r[0] == itf.name for r in per_interface) == len(departures[d]) == itf.packets > 100, itf.name

    dep = departures[0][np.argsort(departures[0]["t_actual_ns"], kind="stable")]
    rows = [
        r
        for r in tshark(cap, "frame.cap_len", "frame.len", "tcp.seq_raw", "ip.dsfield.ecn", "frame.interface_name")
        if r[4] == "ab.forward"
    ]
    assert len(rows) == len(dep) > 1000
    assert [int(r[2]) for r in rows] == [int(s) for s in dep["tcp_seq"]]
    assert [int(r[1]) for r in rows] == [int(s) for s in dep["size"]]
    assert all(int(r[0]) == min(96, int(r[1])) and r[4] == "ab.forward" for r in rows)
    ce = (dep["flags"] & packetlog.FLAG_CE_MARKED) != 0
    assert ce.any(), "CoDel with ECN marked some packets"
    assert [int(r[3]) == 3 for r in rows] == list(ce)

    out = tmp_path / "fw.pcapng"
    tlab_ok("pcap", run_dir, "--direction", "ab.forward", "--out", out)
    assert len(tshark(out, "frame.number")) == len(dep)
