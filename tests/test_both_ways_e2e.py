"""`tlab run --both`: one scenario emulated and simulated, compared in one report; on a
link-bound QUIC transfer the two agree."""

import json

import pytest

from scenario_text import flow, link, scenario
from tlab_cli import tlab_ok, write_scenario

pytestmark = pytest.mark.netns

SCENARIO = scenario(
    "both",
    link({"rate": "10Mbit", "delay": "10ms", "queue": {"packets": 50}}, {"delay": "10ms"}),
    flow("quic", cc="cubic"),
    duration="6s",
    seed=2,
)


def run_both(tmp_path, text: str, name: str):
    """`tlab run --both` on `text` (must exit 0): its result and output folder."""
    out = tmp_path / "out"
    res = tlab_ok("run", write_scenario(tmp_path, text, f"{name}.toml"), "--out", out, "--both", "--quiet", timeout=300)
    return res, out


@pytest.mark.timing  # emulated and simulated rates within 5 %
def test_both_ways_agree_on_a_link_bound_transfer(tmp_path):
    """Both modes fill the 10 Mbit/s link (≥ 9 Mbit/s over the flow's time) and their
    throughputs differ by under 5 %: the same link model decides in both; what differs
    is the hosts (real kernels and quinn on sockets vs quinn-proto in virtual time)."""
    res, out = run_both(tmp_path, SCENARIO, "both")
    rates = {}
    for mode, run in (("emulated", out / "both"), ("simulated", out / "simulated" / "both")):
        m = json.loads((run / "base" / "rep-0" / "metrics.json").read_text())
        record = json.loads((run / "base" / "rep-0" / "scenario.json").read_text())
        assert record["mode"] == mode
        rates[mode] = m["flows"]["bulk"]["throughput_bps"]
    assert min(rates.values()) >= 9e6, rates
    assert abs(rates["emulated"] - rates["simulated"]) / rates["simulated"] < 0.05, rates
    report = (out / "both-both" / "report.html").read_text()
    # Paired on the first screen: one row per point and flow, both values and the ratio,
    # the agreement bands stated; the terminal gets the same count.
    assert '<h2 id="agreement">Emulated vs simulated</h2>' in report
    assert report.index('id="agreement"') < report.index('id="table"')
    assert "throughput emulated" in report and "± 5 %" in report
    assert "values within their agreement band" in res.stdout
    for key in ("compare_cwnd", "compare_rtt"):
        assert f'id="plot-{key}"' in report, key


KEYS_SCENARIO = scenario(
    "keys",
    link({"rate": "20Mbit", "delay": "5ms", "queue": {"packets": 100}}, {"delay": "5ms"}, name="path"),
    flow("quic", name="q", cc="cubic"),
    flow("tcp", name="t", cc="cubic"),
    duration="3s",
    seed=3,
)

# What every client's and every served connection's results hold, emulated or simulated
# (agent_proto::summary; docs/agent.md).
TRANSFER_KEYS = {"mode", "sender", "complete", "bytes", "bytes_sent", "bytes_received"}
# The simulator's TCP is not the kernel's: its summary names the stack that stood in.
SIMULATED_ONLY = {"stack"}


def _keys(d: dict) -> set[str]:
    return set(d)


def test_emulated_and_simulated_summaries_use_one_set_of_names(tmp_path):
    """One QUIC and one TCP flow, emulated and simulated: every key of a simulated
    summary (envelope, results, a served connection, QUIC's counters) is a key of the
    emulated one (the agent measures more: sockets, CPU), bar the simulator's own
    `simulated` and `stack`; and both hold the transfer's fields."""
    _, out = run_both(tmp_path, KEYS_SCENARIO, "keys")
    raw = {
        "emulated": out / "keys" / "base" / "rep-0" / "raw",
        "simulated": out / "simulated" / "keys" / "base" / "rep-0" / "raw",
    }
    for name, proto in (("q", "quic"), ("t", "tcp")):
        for end in ("client", "server"):
            emu, sim = (json.loads((raw[m] / f"{name}-{end}.json").read_text()) for m in ("emulated", "simulated"))
            where = f"{proto}-{end}"
            assert sim["simulated"] is True and "simulated" not in emu, where
            assert _keys(sim) - {"simulated"} <= _keys(emu), (where, _keys(sim) - _keys(emu))
            pairs = [(emu["results"], sim["results"])]
            if end == "server":
                assert len(sim["results"]["connections"]) == 1, where
                pairs = [(emu["results"]["connections"][0], sim["results"]["connections"][0])]
            for e, s in pairs:
                assert _keys(e) & _keys(s) >= TRANSFER_KEYS, (where, TRANSFER_KEYS - (_keys(e) & _keys(s)))
                extra = _keys(s) - _keys(e) - SIMULATED_ONLY
                assert not extra, (where, "simulated keys the agent does not write", extra)
                assert (e["mode"], e["sender"]) == (s["mode"], s["sender"]), where
                if proto == "quic":
                    assert _keys(e["quic"]) == _keys(s["quic"]), (where, _keys(e["quic"]) ^ _keys(s["quic"]))
