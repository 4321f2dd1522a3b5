"""The lab's BPF congestion controls for kernel TCP (docs/bpf.md) without loading them:
one list of names and parameters shared by the contract, the scenario schema, the QUIC
controllers and the BPF loader; instance names; parameter packing; scenario errors."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from scenario_text import flow, link, scenario
from transportlab import contract
from transportlab.network import kernel_cc
from transportlab.scenario import ScenarioError, load_scenario


def bulk_scenario(flow_lines: str) -> str:
    """One TCP bulk flow with `flow_lines` (its cc and cc_params) over 10 Mbit/s, RTT 10 ms."""
    return scenario(
        "t",
        link({"rate": "10Mbit", "delay": "5ms", "queue": {"packets": 100}}, {"delay": "5ms"}),
        flow("tcp", extra=flow_lines),
        duration="5s",
    )


def write(tmp_path: Path, flow: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(bulk_scenario(flow))
    return path


def test_the_loader_implements_exactly_the_contracts_bpf_controllers():
    assert set(kernel_cc.PROGRAMS) == set(kernel_cc.bpf_controllers()) == {"vegas", "delay-correlation"}


@pytest.mark.parametrize("controller", ["vegas", "delay-correlation"])
def test_loader_schema_and_quic_agree_on_parameters(controller):
    """The loader packs every contract parameter, in the BPF program's struct order, and
    kernel TCP takes the QUIC controller's parameters less CUBIC's `variant` (the kernel's
    CUBIC underneath has fixed constants)."""
    tcp = contract.parameters("tcp", controller)
    quic = {k: v for k, v in contract.parameters("quic", controller).items() if k != "variant"}
    assert tcp == quic
    packed = [name for name, _ in kernel_cc.PROGRAMS[controller].packing]
    assert packed == list(tcp)
    assert contract.implementation("quic", controller) == "congestion"
    assert contract.implementation("tcp", controller) == "bpf"


def test_the_bpf_programs_struct_layout_matches_the_packing():
    """Each program's .rodata `params` struct is one u64 per packed parameter, in order."""
    src = Path(kernel_cc.PROJECT_ROOT / "bpf" / "src")
    for prog, struct_name in (("vegas", "vegas_params"), ("delay-correlation", "dc_params")):
        text = (src / kernel_cc.PROGRAMS[prog].object_file.replace(".o", ".c")).read_text()
        body = text[text.index(f"struct {struct_name} {{") :]
        body = body[: body.index("};")]
        fields = [line.split()[1].rstrip(";") for line in body.splitlines()[1:] if line.strip().startswith("__u64")]
        assert len(fields) == len(kernel_cc.PROGRAMS[prog].packing), (prog, fields)
        for field, (param, _) in zip(fields, kernel_cc.PROGRAMS[prog].packing):
            assert field.startswith(param), (prog, field, param)
        assert kernel_cc.PROGRAMS[prog].placeholder in text


def test_packing_scales_and_defaults():
    values = kernel_cc.resolve_params("vegas", {"alpha": 1.5})
    assert values == {"alpha": 1.5, "beta": 4, "gamma": 1}
    assert struct.unpack("<3Q", kernel_cc.pack_params(kernel_cc.PROGRAMS["vegas"], values)) == (1500, 4000, 1000)
    dc = kernel_cc.resolve_params("delay-correlation", {"threshold": 0.95, "window": 64})
    packed = struct.unpack("<6Q", kernel_cc.pack_params(kernel_cc.PROGRAMS["delay-correlation"], dc))
    assert packed == (64, 950_000, 0x5EED_DE1A_7C0E_2014, 2000, 10_000, 16_000)


@pytest.mark.parametrize(
    ("controller", "params", "match"),
    [
        ("vegas", {"delta": 1}, r"delta = 1 is not a parameter of vegas \(it takes alpha, beta, gamma\)"),
        ("vegas", {"alpha": -1}, r"vegas's alpha = -1: is 0 to 1000 packets"),
        ("vegas", {"alpha": 5}, r"vegas's alpha = 5: must not exceed beta \(4\)"),
        ("delay-correlation", {"window": 2.5}, r"delay-correlation's window = 2.5: is a whole number"),
        ("delay-correlation", {"variant": "chromium"}, r"variant = 'chromium' is not a parameter"),
    ],
)
def test_the_loader_refuses_bad_parameters_naming_them(controller, params, match):
    with pytest.raises(kernel_cc.KernelCcError, match=match):
        kernel_cc.resolve_params(controller, params)


def test_instance_names_fit_the_kernel_and_differ_per_run_and_parameters():
    a = kernel_cc.instance_name("vegas", {"alpha": 2}, salt="run1")
    assert a == kernel_cc.instance_name("vegas", {"alpha": 2}, salt="run1")
    others = {
        kernel_cc.instance_name("vegas", {"alpha": 3}, salt="run1"),
        kernel_cc.instance_name("vegas", {"alpha": 2}, salt="run2"),
    }
    assert a not in others and len(others) == 2
    dc = kernel_cc.instance_name("delay-correlation", {}, salt="run1")
    for name in (a, dc, *others):
        assert len(name) == kernel_cc.NAME_MAX and name.startswith("tlab_")
    assert a.startswith("tlab_veg_") and dc.startswith("tlab_dc_")


def test_a_name_not_ours_is_refused():
    with pytest.raises(kernel_cc.KernelCcError, match="starts with 'tlab'"):
        kernel_cc.unload("cubic")
    with pytest.raises(kernel_cc.KernelCcError, match="at most 15 characters"):
        kernel_cc.load("tlab_much_too_long_name", "vegas", {})


# --- the scenario schema -----------------------------------------------------------------


def test_tcp_vegas_with_parameters_is_accepted(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_cc, "support_problem", lambda: None)  # no root or kernel needed here
    s = load_scenario(write(tmp_path, 'cc = "vegas"\ncc_params = { alpha = 1, beta = 3 }'))
    assert (s.flows[0].cc, s.flows[0].cc_params) == ("vegas", {"alpha": 1, "beta": 3})


@pytest.mark.parametrize(
    ("flow", "match"),
    [
        (
            'cc = "vegas"\ncc_params = { alpha = 2, delta = 1 }',
            r"flows\.bulk\.cc_params\.delta: not a parameter of TCP vegas \(it takes alpha, beta, gamma\) \(got 1\)",
        ),
        (
            'cc = "vegas"\ncc_params = { alpha = 6 }',
            r"cc_params\.alpha: vegas's alpha must not exceed beta \(4\) \(got 6\)",
        ),
        (
            'cc = "delay-correlation"\ncc_params = { threshold = 1.5 }',
            r"cc_params\.threshold: delay-correlation's threshold is 0 to 1 \(got 1\.5\)",
        ),
        (
            'cc = "delay-correlation"\ncc_params = { variant = "chromium" }',
            r"cc_params\.variant: not a parameter of TCP delay-correlation",
        ),
        (
            'cc = "cubic"\ncc_params = { beta = 0.7 }',
            r"cc_params\.beta: not a parameter of TCP cubic \(it takes none\)",
        ),
    ],
)
def test_bad_tcp_cc_params_name_field_and_value(tmp_path, flow, match, monkeypatch):
    monkeypatch.setattr(kernel_cc, "support_problem", lambda: None)
    path = write(tmp_path, flow)
    with pytest.raises(ScenarioError, match=match) as info:
        load_scenario(path)
    assert str(path) in str(info.value) or path.name in str(info.value)


def test_without_bpf_support_a_flow_needing_it_is_refused_naming_it(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_cc, "support_problem", lambda: "the kernel has no BTF (/sys/kernel/btf/vmlinux)")
    with pytest.raises(
        ScenarioError,
        match=r"flows\.bulk\.cc: TCP vegas is the lab's BPF program \(docs/bpf\.md\) and this machine cannot load it: "
        r"the kernel has no BTF",
    ):
        load_scenario(write(tmp_path, 'cc = "vegas"'))
    # The kernel's own controls need no BPF.
    assert load_scenario(write(tmp_path, 'cc = "cubic"')).flows[0].cc == "cubic"
