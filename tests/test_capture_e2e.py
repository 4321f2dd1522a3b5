"""pcapng capture end to end: a run's `capture` table makes the engine write
raw/capture.pcapng, which tshark reads packet for packet as the packet log has them."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tlab_cli import run_one
from transportlab.artefacts import packetlog, pcapng

pytestmark = pytest.mark.netns

SCENARIO = textwrap.dedent(
    """
    name = "capture"
    duration = "3s"
    seed = 2
    hosts = ["a", "b"]
    capture = { snaplen = 96, directions = ["ab.forward"] }

    [[links]]
    name = "ab"
    between = ["a", "b"]
    forward = { rate = "10Mbit", delay = "5ms", queue = { packets = 100, discipline = "codel", ecn = true } }
    reverse = { delay = "5ms" }

    [sysctls.a]
    "net.ipv4.tcp_ecn" = 1

    [[flows]]
    name = "bulk"
    from = "a"
    to = "b"
    protocol = "tcp"
    """
)


def tshark(path, *fields: str) -> list[list[str]]:
    args = ["tshark", "-r", str(path), "-T", "fields", "-E", "separator=,"]
    for f in fields:
        args += ["-e", f]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return [line.split(",") for line in out.splitlines()]


def test_capture_holds_every_departure_of_the_direction_and_tshark_reads_it(tmp_path):
    """One interface, named after the captured direction; tshark reads as many packets as
    the log has departures from it, with the same TCP sequence numbers in the same order,
    the same CE marks (ECN on the wire as the receiver got it), truncated to the snap
    length; nothing of the reverse direction. `tlab pcap` lists and extracts it."""
    _, run_dir = run_one(tmp_path, SCENARIO)
    cap = run_dir / "raw" / "capture.pcapng"
    (itf,) = pcapng.read(cap)
    assert (itf.name, itf.snaplen, itf.linktype) == ("ab.forward", 96, 228)

    recs = np.asarray(packetlog.read_records(run_dir / "raw" / "packets.tlog"))
    dep = recs[(recs["event"] == packetlog.DEPARTURE) & (recs["direction"] == 0)]
    dep = dep[np.argsort(dep["t_actual_ns"], kind="stable")]
    rows = tshark(cap, "frame.cap_len", "frame.len", "tcp.seq_raw", "ip.dsfield.ecn", "frame.interface_name")
    assert len(rows) == len(dep) == itf.packets > 1000
    assert [int(r[2]) for r in rows] == [int(s) for s in dep["tcp_seq"]]
    assert [int(r[1]) for r in rows] == [int(s) for s in dep["size"]]
    assert all(int(r[0]) == min(96, int(r[1])) and r[4] == "ab.forward" for r in rows)
    ce = (dep["flags"] & packetlog.FLAG_CE_MARKED) != 0
    assert ce.any(), "CoDel with ECN marked some packets"
    assert [int(r[3]) == 3 for r in rows] == list(ce)

    out = tmp_path / "fw.pcapng"
    res = subprocess.run(
        [sys.executable, "-m", "transportlab", "pcap", str(run_dir), "--direction", "ab.forward", "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    assert len(tshark(out, "frame.number")) == len(dep)
