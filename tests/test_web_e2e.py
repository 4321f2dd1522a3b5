"""Web pages over msTCP received unordered, in namespaces with loss on the data
direction: every object of every completed page arrives whole and exactly once, and an
object whose chunks all arrived is handed over before an object ahead of it in the
byte stream whose chunk was lost (the in-order stream could not have: with equal
secondaries interleaved one chunk per object in turn, their last chunks lie in object
order, so an ordered receiver completes them in that order)."""

import json

import pyarrow.ipc
import pytest

from one_flow import one_flow_scenario
from tlab_cli import run_one

pytestmark = pytest.mark.netns

# 10 Mbit/s so a 30 KB + 10 × 12 KB page takes ~0.25 s: about 20 pages in 6 s, each with
# a last round of 10 chunks, of which 5 % loss hits several.
SECONDARIES = ", ".join(['"12KB"'] * 10)
SCENARIO = one_flow_scenario(
    f'page = {{ primary = "30KB", secondaries = [{SECONDARIES}] }}\ndelivery = "unordered"',
    name="web",
    forward='rate = "10Mbit", delay = "30ms"',
    reverse='rate = "10Mbit", delay = "30ms", loss = "5%"',
    duration="6s",
    settings="seed = 5",
)


def test_mstcp_objects_overtake_a_lost_chunk_of_another_object(tmp_path):
    m, run_dir = run_one(tmp_path, SCENARIO)
    flow = m["flows"]["web"]
    raw = run_dir / "raw"
    page = json.loads((raw / "web-client.json").read_text())["results"]["page"]
    assert page["framing"] == "mstcp" and page["malformed"] == 0 and page["tap"]["drops"] == 0
    assert flow["pages_completed"] >= 3 and flow["drops"].get("random_loss", 0) > 0
    t = pyarrow.ipc.open_file(str(raw / "web-client-page.arrow")).read_all().to_pylist()
    done = [r for r in t if r["page_end_ns"] is not None]
    assert len(done) == 11 * flow["pages_completed"]
    for r in done:
        assert r["request_ns"] <= r["first_byte_ns"] <= r["complete_ns"] <= r["page_end_ns"], r
    # Overtaking: secondary k complete (by the packet path) before secondary j < k.
    by_page: dict[int, dict[int, dict]] = {}
    for r in done:
        by_page.setdefault(r["page"], {})[r["object"]] = r
    overtakes = [
        (p, j, k)
        for p, objs in by_page.items()
        for j in range(1, 11)
        for k in range(j + 1, 11)
        if objs[k]["complete_ns"] < objs[j]["complete_ns"] and objs[k]["via"] == "packet"
    ]
    assert overtakes, "no object was handed over ahead of a lost chunk of another"
