"""Third-party QUIC stacks end to end (docs/stacks.md): a 5 MB HTTP/3 download with each
stack over a 20 Mbit/s link losing 1 % each way completes with the right byte count, and
the run's series has the sender's congestion window and RTT from its qlog."""

import json
import os

import pyarrow.ipc
import pytest

from one_flow import download_until_done
from tlab_cli import run_one, tlab, write_scenario
from transportlab.stacks.quic import STACKS

pytestmark = pytest.mark.netns

LOSSY = 'rate = "20Mbit", delay = "10ms", queue = { packets = 100 }, loss = "1%"'
SIZE = 5_000_000


def scenario(implementation: str) -> str:
    flow = f'implementation = "{implementation}"\ndirection = "download"\nbytes = {SIZE}'
    return download_until_done(flow, protocol="quic", link=LOSSY, duration="40s", seed=5)


@pytest.mark.parametrize("implementation", list(STACKS))
def test_stack_download_completes_with_qlog_series(tmp_path, implementation):
    m, run_dir = run_one(tmp_path, scenario(implementation))
    flow = m["flows"]["dl"]
    assert flow["complete"] is True, flow
    raw = run_dir / "raw"
    client = json.loads((raw / "dl-client.json").read_text())["results"]
    assert client["implementation"] == implementation and client["bytes"] == SIZE
    assert client["application"] == "http3"
    # The link carried the file (and its QUIC and HTTP/3 overhead) and lost some of it.
    assert flow["bytes_delivered"] > SIZE
    assert flow["drops"].get("random_loss", 0) > 0
    assert flow["goodput_bps"] is not None and 0 < flow["goodput_bps"] < 20e6
    # Each end reports its stack's CPU time (the stack's own processes), as an agent does.
    cpu = flow["cpu_s"]
    assert cpu["client_user"] + cpu["client_sys"] > 0 and cpu["server_user"] + cpu["server_sys"] > 0, cpu
    # The sender (the server) lost packets, and its qlog said so.
    assert flow["lost_packets"] > 0
    series = pyarrow.ipc.open_file(raw / "dl-server.arrow").read_all().to_pandas()
    assert len(series) > 10
    # The qlog covers the whole transfer, not a part of it cut off at the server's stop:
    # a packet sent at least for every 1500 bytes of the file.
    assert series["packets_sent"].iloc[-1] >= SIZE / 1500
    cwnd = series["cwnd_bytes"].dropna()
    srtt = series["srtt_us"].dropna()
    assert len(cwnd) and cwnd.max() > 10_000
    # 20 ms of path RTT at least; the qlog's RTT is in ms (ngtcp2: whole ms).
    assert len(srtt) and 20_000 <= srtt.iloc[-1] < 1_000_000
    assert flow["rtt_ms"] is not None and flow["rtt_ms"]["p50"] >= 20
    # Each end's qlog is kept beside the series.
    assert (raw / "dl-server.sqlog").stat().st_size > 0 and (raw / "dl-client.sqlog").stat().st_size > 0


@pytest.mark.parametrize(
    "client_script, expected",
    [
        # A stack that crashes: the run fails with its exit status and stderr's last lines.
        ('echo "panic: stream 0 exploded" >&2; exit 3', "quic-go client exited 3: panic: stream 0 exploded"),
        # A stack that hangs (no CPU, no I/O): its end stops it before the runner's grace ends.
        ('echo "still connecting" >&2; exec sleep 600', "quic-go client hung (no CPU and no I/O for 2 s"),
    ],
)
def test_a_crashing_or_hanging_stack_fails_the_run_with_its_stderr(tmp_path, client_script, expected):
    """quic-go's client replaced by a script (its server is the real one)."""
    from transportlab.locations import binary

    real = binary("tlab-quic-go")
    bins = tmp_path / "bin"
    bins.mkdir()
    for name in real.parent.iterdir():
        if name.is_file() and os.access(name, os.X_OK) and name.name != "tlab-quic-go":
            (bins / name.name).symlink_to(name)
    fake = bins / "tlab-quic-go"
    fake.write_text(f'#!/bin/sh\nif [ "$1" = server ]; then exec {real} "$@"; fi\n{client_script}\n')
    fake.chmod(0o755)
    text = scenario("quic-go").replace('duration = "40s"', 'duration = "2s"')
    out = tmp_path / "out"
    env = {**os.environ, "TLAB_BIN_DIR": str(bins)}
    res = tlab("run", write_scenario(tmp_path, text, "s.toml"), "--out", out, "--quiet", timeout=60, env=env)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    (failures,) = out.glob("**/raw/failures.json")
    (failure,) = json.loads(failures.read_text())
    assert failure["role"] == "client" and expected in failure["message"], failure
    assert not list(out.glob("**/DONE"))
