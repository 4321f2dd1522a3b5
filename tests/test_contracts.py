"""What Python hands to Rust and reads back from it, checked against files the other side
checks too (docs/architecture.md, "One source for every shared list"):

- the engine configuration Python writes for a shipped multipath scenario is kept in
  tests/data/engine-config.json, which the engine's Rust tests parse;
- the names Python validates scenarios with come from contracts/contract.json."""

from __future__ import annotations

import json
import os
from pathlib import Path

from transportlab import contract
from transportlab.artefacts import packetlog
from transportlab.locations import PROJECT_ROOT
from transportlab.plan.runs import plan

DATA = Path(__file__).parent / "data"
ENGINE_CONFIG = DATA / "engine-config.json"
# Multipath legs with a pinned user, trace-free rates, jitter, loss: most of the config.
SCENARIO = PROJECT_ROOT / "scenarios" / "s1" / "fairness" / "split_ratio.toml"


def test_engine_config_matches_the_file_rust_parses(tmp_path):
    _, runs = plan(SCENARIO, tmp_path)
    topo = runs[0].resolved.topology
    fds = {h: 3 + i for i, h in enumerate(topo.hosts)}
    config = topo.engine_config(fds, seed=1, log_path="packets.tlog", stats_path="engine.json")
    text = json.dumps(config, indent=1, sort_keys=True) + "\n"
    if os.environ.get("TLAB_BLESS") == "1":
        ENGINE_CONFIG.write_text(text)
    assert ENGINE_CONFIG.read_text() == text, "engine config changed: check the Rust side, then TLAB_BLESS=1"
    assert any("legs" in d["spec"] for d in config["directions"]), "the sample must hold a multipath direction"


def test_python_names_come_from_the_contract():
    c = json.loads((PROJECT_ROOT / "contracts" / "contract.json").read_text())
    assert {int(r["code"]): r["name"] for r in c["drop_reasons"]} == packetlog.REASONS
    assert set(packetlog.UNINTENDED_REASONS) == {int(r["code"]) for r in c["drop_reasons"] if r["unintended"]}
    assert c["packet_log_version"] == packetlog.VERSION and packetlog.RECORD.itemsize == c["packet_log_record_size"]
    assert "delay-correlation" in contract.controllers("quic") and "cubic" in contract.controllers("tcp")
