"""The lab's BPF congestion controls in the kernel (docs/bpf.md), end to end: they load,
are listed, a TCP flow runs them and reports them, teardown unregisters them; Vegas keeps
between alpha and beta packets queued at a 10 Mbit/s bottleneck; kernel TCP Vegas and
QUIC Vegas (crate `congestion`) agree on the queueing delay they cause."""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path

import numpy as np
import pytest

from scenario_text import flow, link, scenario
from tlab_cli import run_one, tlab
from transportlab import metrics as M
from transportlab.artefacts.rundir import RunDir
from transportlab.network import clean, kernel_cc
from transportlab.network.registry import ProcessRecord, RunRecord

pytestmark = pytest.mark.netns

RATE_BPS = 10e6
FULL_PACKET_BYTES = 1500  # the TUN MTU: a full-size TCP segment on the wire
PACKET_TIME_MS = FULL_PACKET_BYTES * 8 / RATE_BPS * 1e3  # 1.2 ms at 10 Mbit/s
STEADY_FROM_S = 5.0  # slow start and Vegas's first rounds are over by then (20 ms RTT)


def bulk_scenario(protocol: str, cc: str, params: str = "", duration_s: int = 15) -> str:
    return scenario(
        "bpf-e2e",
        link({"rate": "10Mbit", "delay": "10ms", "queue": {"packets": 100}}, {"delay": "10ms"}),
        flow(protocol, cc=cc, extra=params),
        duration=f"{duration_s}s",
        seed=3,
    )


def steady_queue(run_dir: Path, flow: str = "bulk") -> tuple[np.ndarray, np.ndarray]:
    """Per data packet at the bottleneck after STEADY_FROM_S until 1 s before the end:
    (queueing delay in ms, packets queued ahead of it). A FIFO drained at a constant rate
    holds rate·delay bytes ahead of a packet that waited `delay`; in full-size packets
    that is delay / (one packet's serialisation time)."""
    run = RunDir(run_dir)
    m = run.metrics.flows[flow]
    d = m.data
    assert d is not None and m.bottleneck is not None
    f = M.Flow(d.src, d.dst, d.sport, d.dport, d.proto)
    q = M.queueing_delay(run.records, m.bottleneck, f, rate_bps=RATE_BPS, fixed_delay_ns=10e6)
    t = (q["arrival_ns"].to_numpy() - run.t0_ns) / 1e9
    end = (run.t_end_ns - run.t0_ns) / 1e9 if run.t_end_ns else t.max()
    keep = (t >= STEADY_FROM_S) & (t <= end - 1.0)
    delay_ms = q["queueing_ns"].to_numpy()[keep] / 1e6
    assert len(delay_ms) > 1000, f"only {len(delay_ms)} packets in the steady state"
    return delay_ms, delay_ms / PACKET_TIME_MS


def client_summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "raw" / "bulk-client.json").read_text())["results"]


@pytest.mark.parametrize("controller", ["vegas", "delay-correlation"])
def test_loads_is_listed_and_unloads(controller):
    name = kernel_cc.instance_name(controller, {}, salt=f"e2e-{secrets.token_hex(4)}")
    pin = kernel_cc.load(name, controller, {})
    try:
        assert name in kernel_cc.available() and pin.exists() and name in kernel_cc.loaded()
    finally:
        assert kernel_cc.unload(name)
    assert name not in kernel_cc.available() and not pin.exists()


def test_a_failure_after_registering_leaves_nothing(monkeypatch):
    """Pinning fails (no such folder): the link is closed, so the control unregisters."""
    name = kernel_cc.instance_name("vegas", {}, salt=f"e2e-{secrets.token_hex(4)}")
    monkeypatch.setattr(kernel_cc, "pin_path", lambda n: kernel_cc.PIN_DIR / "no-such-folder" / n)
    with pytest.raises(kernel_cc.KernelCcError, match="bpf_obj_pin failed: ENOENT"):
        kernel_cc.load(name, "vegas", {})
    assert name not in kernel_cc.available()


def test_clean_unregisters_what_a_killed_run_recorded(tmp_path):
    """What `tlab clean` does for a dead run's record (not `clean()` itself: that would
    also remove other live work on a shared machine)."""
    name = kernel_cc.instance_name("vegas", {}, salt=f"e2e-{secrets.token_hex(4)}")
    record = RunRecord("e2e000", ProcessRecord(2**22 + 7, 1, "tlab"), kernel_ccs=[name])
    path = tmp_path / "e2e000.json"
    path.write_text(json.dumps({**record.__dict__, "owner": record.owner.__dict__}))
    assert RunRecord.load(path).kernel_ccs == [name]
    kernel_cc.load(name, "vegas", {})
    done: list[str] = []
    assert clean._unload_kernel_ccs("e2e000", RunRecord.load(path).kernel_ccs, done) == []
    assert done == [f"run e2e000: unregistered TCP congestion control {name}"]
    assert name not in kernel_cc.available()


VEGAS_PARAMS = "cc_params = { alpha = 2, beta = 4, gamma = 1 }"


@pytest.fixture(scope="module")
def tcp_vegas_run(tmp_path_factory) -> tuple[set[str], dict, Path]:
    """One kernel TCP Vegas run (α = 2, β = 4) for the two tests that check it: the
    controls registered before it, its metrics and its folder."""
    before = set(kernel_cc.available())
    m, run_dir = run_one(tmp_path_factory.mktemp("tcp-vegas"), bulk_scenario("tcp", "vegas", VEGAS_PARAMS))
    return before, m, run_dir


@pytest.mark.timing  # packets queued within Vegas's band, ±1
def test_a_tcp_vegas_flow_runs_the_bpf_program_and_keeps_alpha_to_beta_packets_queued(tcp_vegas_run):
    before, m, run_dir = tcp_vegas_run
    # The agents selected the run's own instance (TCP_CONGESTION reads it back), and
    # teardown unregistered it.
    cc = client_summary(run_dir)["cc"]
    assert cc.startswith("tlab_veg_"), cc
    assert cc not in kernel_cc.available() and set(kernel_cc.available()) <= before | {cc}
    assert m["unintended_drops"] == 0
    bulk = m["flows"]["bulk"]
    # The sender's TCP_INFO series was checked for a window no socket can have (docs/bpf.md,
    # "A kernel fault"); without loss there is no recovery, so none.
    assert "impossible_window" in bulk and bulk["impossible_window"] is None
    # Vegas never fills the 100-packet queue: no drops, and the link stays busy.
    assert bulk["drops"] == {} or sum(bulk["drops"].values()) == 0, bulk["drops"]
    assert bulk["throughput_bps"] >= 0.9 * RATE_BPS, bulk["throughput_bps"]
    _, queued = steady_queue(run_dir)
    # Vegas holds Diff (its estimate of its own packets queued) in [alpha, beta] = [2, 4]
    # by moving cwnd one packet per RTT; the queue a packet sees then spans about one
    # packet either side of that band (cwnd steps, the receiver's delayed ACKs releasing
    # two segments at once). The mean must lie inside the band widened by that one
    # packet, and the queue must stay far from the 100-packet limit.
    mean = float(np.mean(queued))
    print(f"TCP Vegas steady state: {mean:.2f} packets queued on average, p99 {np.percentile(queued, 99):.2f}")
    assert 2 - 1 <= mean <= 4 + 1, f"mean {mean:.2f} packets queued"
    assert float(np.percentile(queued, 99)) <= 4 + 4, np.percentile(queued, 99)


@pytest.mark.timing  # mean queueing delays within 2.4 ms
def test_kernel_tcp_vegas_and_quic_vegas_agree_on_queueing_delay(tmp_path, tcp_vegas_run):
    """The same Vegas (α = 2, β = 4) in kernel TCP (BPF) and in QUIC (crate `congestion`),
    same network (the TCP run is the one the test above checks). Tolerance: the width of
    the band both steer into, β − α = 2 packets of 1500 bytes at 10 Mbit/s = 2.4 ms. Both
    are correct anywhere in the band, so their means may differ by up to its width; more
    than that means one is wrong."""
    _, _, tcp_dir = tcp_vegas_run
    _, quic_dir = run_one(tmp_path, bulk_scenario("quic", "vegas", VEGAS_PARAMS))
    tcp_ms, _ = steady_queue(tcp_dir)
    quic_ms, _ = steady_queue(quic_dir)
    tolerance_ms = (4 - 2) * PACKET_TIME_MS
    diff = abs(float(np.mean(tcp_ms)) - float(np.mean(quic_ms)))
    print(f"mean queueing delay: TCP {np.mean(tcp_ms):.2f} ms, QUIC {np.mean(quic_ms):.2f} ms")
    assert diff <= tolerance_ms, f"TCP {np.mean(tcp_ms):.2f} ms vs QUIC {np.mean(quic_ms):.2f} ms"


@pytest.mark.timing  # queueing delay under 30 ms
def test_tcp_delay_correlation_runs_its_instance_and_keeps_a_deep_queue_short(tmp_path):
    """S2's set-up (10 Mbit/s, RTT 10 ms, 1000-packet queue), shortened: CUBIC alone fills
    the queue (1.2 s of delay). Once the correlation window holds bufferbloat's signature
    the layer clamps cwnd at the fitted BDP plus at most max(10, BDP/16) = 10 packets of
    dither (12 ms at this rate); 30 ms, 25 packets, leaves as much again for the fit's
    error, and is still 40 times less than the full queue."""
    text = (
        bulk_scenario("tcp", "delay-correlation", "cc_params = { window = 32, threshold = 0.9 }", duration_s=10)
        .replace('delay = "10ms"', 'delay = "5ms"')
        .replace("packets = 100", "packets = 1000")
    )
    m, run_dir = run_one(tmp_path, text)
    cc = client_summary(run_dir)["cc"]
    assert cc.startswith("tlab_dc_") and cc not in kernel_cc.available()
    assert m["flows"]["bulk"]["throughput_bps"] >= 0.85 * RATE_BPS
    run = RunDir(run_dir)
    flow = run.metrics.flows["bulk"]
    d = flow.data
    assert d is not None and flow.bottleneck is not None
    q = M.queueing_delay(run.records, flow.bottleneck, M.Flow(d.src, d.dst, d.sport, d.dport, d.proto), RATE_BPS, 5e6)
    t = (q["arrival_ns"].to_numpy() - run.t0_ns) / 1e9
    steady = q["queueing_ns"].to_numpy()[(t >= STEADY_FROM_S) & (t <= 9.0)] / 1e6
    print(f"TCP delay-correlation steady state: mean queueing delay {np.mean(steady):.2f} ms")
    assert len(steady) > 1000 and float(np.mean(steady)) <= 30.0, np.mean(steady)


def test_the_command_line_loads_lists_and_unloads():
    name = f"tlab_veg_{secrets.token_hex(3)}"

    def bpf(*args: str) -> subprocess.CompletedProcess:
        return tlab("bpf", *args, timeout=60)

    bad = bpf("load", name, "vegas", "alpha=9")
    assert bad.returncode == 1 and "vegas's alpha = 9: must not exceed beta (4)" in bad.stderr
    assert name not in kernel_cc.available()
    ok = bpf("load", name, "vegas", "alpha=1", "beta=3")
    try:
        assert ok.returncode == 0, ok.stderr
        assert ok.stdout.strip() == str(kernel_cc.pin_path(name)) and name in kernel_cc.available()
        assert name in bpf("list").stdout.split()
    finally:
        assert bpf("unload", name).returncode == 0
    assert name not in kernel_cc.available()
