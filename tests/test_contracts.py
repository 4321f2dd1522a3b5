"""What Python hands to Rust and reads back from it, checked against files the other side
checks too (docs/architecture.md, "One source for every shared list"):

- the engine configuration Python writes for a shipped multipath scenario is kept in
  tests/data/engine-config.json, which the engine's Rust tests parse;
- the names Python validates scenarios with come from contracts/contract.json."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

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
    assert (packetlog.FLAG_COPY, packetlog.FLAG_CE_MARKED) == (1, 2)
    assert c["packet_log_version"] == packetlog.VERSION and packetlog.RECORD.itemsize == c["packet_log_record_size"]
    assert "delay-correlation" in contract.controllers("quic") and "cubic" in contract.controllers("tcp")


def test_rust_written_v3_log_round_trips():
    """tests/data/packets_v3.tlog is written by the engine's own writer (crates/engine
    log.rs, `sample_log_for_python`); every field reads back as written."""
    recs = packetlog.read_records(DATA / "packets_v3.tlog")
    assert len(recs) == 3
    assert list(recs["t_ns"]) == [1_000_000_000, 1_025_000_000, 1_030_000_000]
    assert list(recs["t_actual_ns"]) == [1_000_000_000, 1_025_000_850, 1_030_000_100]
    assert list(recs["event"]) == [packetlog.ARRIVAL, packetlog.DEPARTURE, packetlog.DROP]
    assert list(recs["packet_id"]) == [7, 7, 8] and list(recs["size"]) == [1500, 1500, 52]
    assert (int(recs["src"][0]), int(recs["dst"][0])) == (0x0A000001, 0x0A000002)
    assert (int(recs["sport"][0]), int(recs["dport"][0]), int(recs["proto"][0])) == (40000, 5001, 6)
    assert int(recs["tcp_seq"][0]) == 123_456_789 and list(recs["flags"]) == [
        0,
        packetlog.FLAG_CE_MARKED,
        packetlog.FLAG_COPY,
    ]
    assert list(recs["direction"]) == [0, 0, 1] and int(recs["reason"][2]) == 1
    assert list(packetlog.actual_time(recs)) == [1_000_000_000, 1_025_000_850, 1_030_000_100]
    assert list(recs["payload_len"]) == [1448, 1448, 1448]


def test_reader_refuses_an_unknown_version(tmp_path):
    """Versions 1 (40-byte records) and 2 (48 bytes, no payload length) are refused, the
    message naming the file and both versions."""
    path = tmp_path / "packets.tlog"
    for old, size in ((1, 40), (2, 48)):
        path.write_bytes(packetlog.MAGIC + old.to_bytes(4, "little") + size.to_bytes(4, "little") + bytes(size))
        with pytest.raises(packetlog.PacketLogError) as info:
            packetlog.read_records(path)
        e = str(info.value)
        assert str(path) in e and f"version {old}" in e and f"version {packetlog.VERSION}" in e


def _contract_tables() -> str:
    """docs/packet-log.md's tables of event codes, drop reasons and flags, from the contract."""
    c = json.loads((PROJECT_ROOT / "contracts" / "contract.json").read_text())
    lines = ["| event | name | meaning |", "|---|---|---|"]
    lines += [f"| {e['code']} | `{e['name']}` | {e['meaning']} |" for e in c["packet_log_events"]]
    lines += ["", "| reason | name | origin | unintended | meaning |", "|---|---|---|---|---|"]
    lines += [
        f"| {r['code']} | `{r['name']}` | {r['origin']} | {'yes' if r['unintended'] else 'no'} | {r['meaning']} |"
        for r in c["drop_reasons"]
    ]
    lines += ["", "| flag bit | name | meaning |", "|---|---|---|"]
    lines += [f"| {f['bit']} | `{f['name']}` | {f['meaning']} |" for f in c["packet_log_flags"]]
    return "\n".join(lines)


def test_packet_log_docs_list_the_contracts_codes():
    doc = PROJECT_ROOT / "docs" / "packet-log.md"
    text = doc.read_text()
    begin, end = "<!-- contract:begin -->\n", "<!-- contract:end -->"
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    want = head + begin + _contract_tables() + "\n" + end + tail
    if os.environ.get("TLAB_BLESS") == "1":
        doc.write_text(want)
    assert text == want, "docs/packet-log.md's tables differ from contracts/contract.json: TLAB_BLESS=1"
