"""Dual connectivity end to end in namespaces: a TCP download over two 20 Mbit/s legs
split 1:1 gets clearly more than one leg's rate; with duplication and 1 % random loss on
each leg, (almost) no packet is lost to random loss before the client."""

import json
from pathlib import Path

import numpy as np
import pytest

from scenario_text import flow, link, scenario
from tlab_cli import run_one
from transportlab.artefacts.packetlog import ARRIVAL, DEPARTURE, DROP, read_records

pytestmark = pytest.mark.netns


def run(tmp_path, loss: str | None, split: dict, size: str) -> tuple[dict, Path]:
    """A download of `size` over a forward direction split over two 20 Mbit/s legs
    (`loss` on each, if given)."""
    legs = [
        {"name": name, "rate": "20Mbit", "delay": "10ms", "queue": {"packets": 100}} | ({"loss": loss} if loss else {})
        for name in ("master", "secondary")
    ]
    text = scenario(
        "dc-e2e",
        link(
            {"legs": legs, "split": split},
            {"rate": "20Mbit", "delay": "10ms", "queue": {"packets": 100}},
            name="radio",
            between=("server", "client"),
        ),
        flow("tcp", name="dl", cc="reno", direction="download", bytes=size, mss=1280),
        duration="20s",
        stop_when="flows-done",
        seed=11,
        hosts=["server", "client"],
    )
    return run_one(tmp_path, text)


@pytest.mark.timing  # goodput above 26 of the legs' 40 Mbit/s
def test_split_over_two_legs_beats_one_leg(tmp_path):
    m, _ = run(tmp_path, loss=None, split={"batch": 100, "ratio": 0.5}, size="30MB")
    flow = m["flows"]["dl"]
    assert flow["complete"] is True
    # One leg carries at most 20 Mbit/s; two legs 40. "Clearly more": above 26 Mbit/s
    # (measured ≈ 30+; TCP Reno loses some to reordering at batch boundaries).
    assert flow["goodput_bps"] > 26e6, flow["goodput_bps"]
    legs = {n: v for n, v in m["links"].items() if n.startswith("radio.forward.")}
    assert set(legs) == {"radio.forward.master", "radio.forward.secondary"}
    carried = [v["delivered_bits"] for v in legs.values()]
    assert min(carried) > 0.4 * sum(carried)  # 1:1 split
    assert m["unintended_drops"] == 0


def test_duplication_hides_leg_loss_from_the_client(tmp_path):
    m, run_dir = run(tmp_path, loss="1%", split={"mode": "duplicate"}, size="10MB")
    flow = m["flows"]["dl"]
    assert flow["complete"] is True
    legs = [v for n, v in m["links"].items() if n.startswith("radio.forward.")]
    assert sum(v["drops"]["random_loss"] for v in legs) > 50  # ~1 % of ~8000 copies per leg
    # Packets that entered the multipath direction and never left it towards the client
    # were dropped on both legs. Random loss takes both copies of a packet with p = 1e-4
    # (about one of ~8000 packets); queue overflow takes both together because the two
    # legs see identical traffic — congestion that duplication cannot hide and TCP must
    # see. So: (almost) none is lost to random loss on both legs.
    config = json.loads((run_dir / "raw" / "engine-config.json").read_text())
    names = [d["name"] for d in config["directions"]]
    index = names.index("radio.forward")
    legs = {len(names) + k for k in range(2)}  # legs are numbered after the directions
    rec = read_records(run_dir / "raw" / "packets.tlog")
    here = rec[rec["direction"] == index]
    entered = set(here["packet_id"][here["event"] == ARRIVAL].tolist())
    left = set(here["packet_id"][here["event"] == DEPARTURE].tolist())
    assert len(entered) > 7000
    drops = rec[(rec["event"] == DROP) & np.isin(rec["direction"], list(legs))]
    reasons: dict[int, list[int]] = {}
    for pid, reason in zip(drops["packet_id"].tolist(), drops["reason"].tolist()):
        reasons.setdefault(pid, []).append(reason)
    missing = entered - left
    assert all(len(reasons.get(pid, [])) == 2 for pid in missing)  # lost on both legs
    both_random = [pid for pid in missing if reasons[pid] == [2, 2]]
    assert len(both_random) <= 3, len(both_random)
    # Each packet lost on both legs leaves a gap in the merge's sequence numbers, given up
    # when t-Reordering expires; the download completes only after the repair, which queues
    # behind the gap, so every gap is skipped before the run ends. metrics.json carries the
    # engine's merge counters on the multipath direction only.
    merge = m["links"]["radio.forward"]["merge"]
    assert merge["gap_skipped"] == len(missing), (merge, len(missing))
    assert (merge["timer_expiries"] > 0) == bool(missing)
    assert all(v["merge"] is None for n, v in m["links"].items() if n != "radio.forward")
    assert m["unintended_drops"] == 0
