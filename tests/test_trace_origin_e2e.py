"""A trace-driven link replays its trace from the scenario's time 0 (plus its
`trace_offset`), emulated and simulated alike: every departure falls exactly on one of
the trace's delivery opportunities at the same trace time, and the same scenario and
seed deliver the same number of packets in every 100 ms."""

import json
from pathlib import Path

import numpy as np
import pytest

from scenario_text import flow, link, scenario
from tlab_cli import tlab_ok
from transportlab.artefacts.packetlog import DEPARTURE, read_records

pytestmark = [pytest.mark.netns, pytest.mark.timing]

PERIOD_MS = 500
OFFSET_MS = 50
# Bursts and gaps: nothing in the first 250 ms (the sender is up long before the first
# opportunity, 200 ms after time 0, so the queue is backlogged from the start), a burst
# of 6 at one instant, one a millisecond for 31 ms, a gap, a burst of 4, a sparse tail.
TRACE_MS = [250] * 6 + list(range(260, 291)) + [380] * 4 + list(range(400, 500, 10)) + [PERIOD_MS]

SCENARIO = scenario(
    "trace-origin",
    link(
        {"trace": "cell.trace", "trace_offset": f"{OFFSET_MS}ms", "queue": {"packets": 30}},
        name="cell",
        between=("a", "b"),
    ),
    flow("udp", name="udp", src="a", dst="b", size=1200, rate="8Mbit"),
    duration="3s",
    seed=11,
    hosts=["a", "b"],
)


def run(tmp_path: Path, out: str, *extra: str) -> Path:
    tlab_ok("run", tmp_path / "s.toml", "--out", tmp_path / out, "--quiet", *extra, timeout=120)
    (raw,) = (tmp_path / out).glob("**/raw")
    return raw


def departures_since_t0(raw: Path) -> np.ndarray:
    """Due times (ns after t0) of what left the trace-driven direction."""
    names = [d["name"] for d in json.loads((raw / "engine.json").read_text())["directions"]]
    rec = read_records(raw / "packets.tlog")
    sel = (rec["event"] == DEPARTURE) & (rec["direction"] == names.index("cell.forward"))
    t0 = int((raw / "t0_ns").read_text())
    return np.asarray(rec["t_ns"][sel]).astype(np.int64) - t0


def test_a_trace_starts_at_time_0_emulated_and_simulated(tmp_path):
    (tmp_path / "cell.trace").write_text("".join(f"{ms}\n" for ms in TRACE_MS))
    (tmp_path / "s.toml").write_text(SCENARIO)
    emulated = [departures_since_t0(run(tmp_path, f"emu{i}")) for i in range(2)]
    simulated = departures_since_t0(run(tmp_path, "sim", "--simulate"))
    period = PERIOD_MS * 1_000_000
    opportunities = {ms * 1_000_000 % period for ms in TRACE_MS}
    end = 2_800_000_000  # the last 200 ms: senders stop, queues drain at teardown
    counts = []
    for what, dep in [("emulated", emulated[0]), ("emulated again", emulated[1]), ("simulated", simulated)]:
        assert len(dep) > 100, what
        assert dep.min() >= 200_000_000, f"{what}: a departure before the trace's first opportunity"
        trace_time = (dep + OFFSET_MS * 1_000_000) % period
        off = sorted(set(trace_time.tolist()) - opportunities)
        assert not off, f"{what}: departures at trace times (ns) that are no opportunity: {off[:5]}"
        counts.append(np.bincount(dep[dep < end] // 100_000_000, minlength=end // 100_000_000))
    assert counts[0].tolist() == counts[1].tolist(), "two emulated runs with one seed"
    assert counts[0].tolist() == counts[2].tolist(), "emulated and simulated"
