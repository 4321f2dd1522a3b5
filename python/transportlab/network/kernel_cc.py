"""The lab's own kernel TCP congestion controls: BPF struct_ops programs (bpf/, built by
scripts/setup.sh) registered under a name of their own per instance, their parameters
written into the program's read-only data before load, so runs with different parameters
never share one (docs/bpf.md).

A registered control lives in a pinned link under `PIN_DIR` (a bpffs): it stays
registered after this process exits, until `unload` removes the pin. The runner records
each instance in the run registry before loading it, unloads it at teardown, and
`tlab clean` unloads the instances of killed runs.

Controls are only ever selected per socket (TCP_CONGESTION, as root), never as a
namespace's default: making a BPF control the default before it is in
net.ipv4.tcp_allowed_congestion_control fails and leaks a kernel reference."""

from __future__ import annotations

import hashlib
import os
import struct
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from transportlab import contract
from transportlab.locations import PROJECT_ROOT, RUN_REGISTRY
from transportlab.network.libbpf import LibbpfError, StructOpsObject

AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
PIN_DIR = Path(os.environ.get("TLAB_BPFFS", RUN_REGISTRY / "bpf"))
OBJECT_DIR = Path(os.environ.get("TLAB_BPF_DIR", PROJECT_ROOT / "bpf" / "build"))
NAME_MAX = 15  # TCP_CA_NAME_MAX (16) less the terminating NUL
NAME_PREFIX = "tlab"
UNREGISTER_TIMEOUT_S = 2.0


class KernelCcError(RuntimeError):
    pass


@dataclass(frozen=True)
class Program:
    """One BPF congestion control: the contract's controller it implements, its object
    file, the struct_ops map in it, the name compiled in (replaced per instance), and how
    its parameters are packed into .rodata: each (contract parameter, scale) as a
    little-endian u64 of round(value × scale), in the program's struct order."""

    controller: str
    object_file: str
    struct_ops_map: str
    placeholder: str
    packing: tuple[tuple[str, int], ...]

    @property
    def instance_prefix(self) -> str:
        return self.placeholder.rstrip("@")

    def path(self) -> Path:
        return OBJECT_DIR / self.object_file


PROGRAMS: dict[str, Program] = {
    p.controller: p
    for p in (
        Program(
            "vegas",
            "vegas.bpf.o",
            "tlab_vegas",
            "tlab_veg_@@@@@@",
            (("alpha", 1000), ("beta", 1000), ("gamma", 1000)),
        ),
        Program(
            "delay-correlation",
            "delay_correlation.bpf.o",
            "tlab_delay_corr",
            "tlab_dc_@@@@@@@",
            (
                ("window", 1),
                ("threshold", 1_000_000),
                ("seed", 1),
                ("dither_small", 1000),
                ("dither_large_min", 1000),
                ("dither_large_divisor", 1000),
            ),
        ),
    )
}


def bpf_controllers() -> tuple[str, ...]:
    """The TCP controllers the contract implements as BPF programs."""
    return tuple(c for c in contract.controllers("tcp") if contract.implementation("tcp", c) == "bpf")


def program(controller: str) -> Program:
    if controller not in PROGRAMS:
        raise KernelCcError(f"no BPF program implements TCP congestion control {controller!r}")
    return PROGRAMS[controller]


def resolve_params(controller: str, given: dict) -> dict[str, int | float | str]:
    """Every parameter of `controller`, given or default, checked against the contract;
    KernelCcError naming the parameter and value otherwise."""
    values, problem = contract.resolve_parameters("tcp", controller, given)
    if problem is not None:
        key, value, why, unknown = problem
        if unknown:
            raise KernelCcError(f"{key} = {value!r} is not a parameter of {controller} ({why})")
        raise KernelCcError(f"{controller}'s {key} = {value!r}: {why}")
    return values


def pack_params(prog: Program, values: dict) -> bytes:
    """Integers exactly (a 64-bit seed does not survive a float), others rounded."""

    def scaled(value: int | float, scale: int) -> int:
        return value * scale if isinstance(value, int) else int(round(value * scale))

    return b"".join(struct.pack("<Q", scaled(values[k], scale)) for k, scale in prog.packing)


def instance_name(controller: str, params: dict, salt: str) -> str:
    """A kernel name for one instance: the program's prefix and a hash of the run
    (`salt`), the controller and its parameters, 15 characters in all."""
    prog = program(controller)
    text = f"{salt}/{controller}/{sorted(params.items())}"
    digest = hashlib.sha256(text.encode()).hexdigest()
    return prog.instance_prefix + digest[: NAME_MAX - len(prog.instance_prefix)]


def available() -> list[str]:
    return AVAILABLE.read_text().split()


def pin_path(name: str) -> Path:
    return PIN_DIR / name


def _check_name(name: str) -> None:
    if not (name.startswith(NAME_PREFIX) and len(name) <= NAME_MAX and name.replace("_", "").isalnum()):
        raise KernelCcError(
            f"kernel congestion control name {name!r}: starts with {NAME_PREFIX!r}, letters, digits "
            f"and '_', at most {NAME_MAX} characters"
        )


def ensure_bpffs() -> None:
    """Mounts a bpffs at PIN_DIR unless one is there."""
    if _is_bpffs(PIN_DIR):
        return
    PIN_DIR.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(["mount", "-t", "bpf", "bpf", str(PIN_DIR)], capture_output=True, text=True)
    if res.returncode != 0 or not _is_bpffs(PIN_DIR):
        raise KernelCcError(f"cannot mount a bpffs at {PIN_DIR}: {res.stderr.strip() or 'not mounted'}")


def _is_bpffs(path: Path) -> bool:
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return False
    return any(len(f := line.split()) > 2 and f[1] == str(path) and f[2] == "bpf" for line in mounts)


def _instance_image(prog: Program, name: str) -> bytes:
    """The program's object file with `name` in place of the compiled-in name (the
    struct_ops map's `name` field, 16 bytes)."""
    path = prog.path()
    try:
        image = path.read_bytes()
    except OSError as e:
        raise KernelCcError(
            f"{path}: {e.strerror} (build the BPF programs: make -C bpf, or scripts/setup.sh)"
        ) from None
    old = prog.placeholder.encode() + b"\0"
    if image.count(old) != 1:
        raise KernelCcError(f"{path}: the name {prog.placeholder!r} occurs {image.count(old)} times, expected once")
    return image.replace(old, name.encode().ljust(len(old), b"\0"))


def load(name: str, controller: str, params: dict) -> Path:
    """Registers `controller` with `params` under the kernel name `name` and pins it;
    returns the pin. On any error nothing stays registered or pinned."""
    _check_name(name)
    prog = program(controller)
    values = resolve_params(controller, params)
    if name in available():
        raise KernelCcError(f"a TCP congestion control named {name} is already registered")
    ensure_bpffs()
    pin = pin_path(name)
    image = _instance_image(prog, name)
    try:
        with StructOpsObject(image, f"{prog.object_file} as {name}") as obj:
            rodata = [m for m in obj.maps() if m.endswith(".rodata")]
            if len(rodata) != 1:
                raise KernelCcError(f"{prog.path()}: expected one .rodata map, found {rodata}")
            obj.set_initial_value(rodata[0], pack_params(prog, values))
            obj.prepare_for_link(prog.struct_ops_map)
            obj.load()
            obj.register_pinned(prog.struct_ops_map, str(pin))
    except LibbpfError as e:
        _remove_pin(pin)
        raise KernelCcError(f"loading {controller} as {name}: {e}") from None
    if name not in available():
        unload(name)
        raise KernelCcError(f"{name} was loaded but is not in {AVAILABLE}")
    return pin


def unload(name: str, timeout_s: float = UNREGISTER_TIMEOUT_S) -> bool:
    """Removes the pin of `name` and waits until the kernel has unregistered it; False if
    there was no pin. KernelCcError if it stays registered."""
    _check_name(name)
    existed = _remove_pin(pin_path(name))
    deadline = time.monotonic() + timeout_s
    while name in available():
        if not existed:
            raise KernelCcError(f"{name} is registered but has no pin in {PIN_DIR}: not loaded by transportlab")
        if time.monotonic() > deadline:
            raise KernelCcError(f"{name} is still registered {timeout_s} s after its pin was removed")
        time.sleep(0.01)
    return existed


def _remove_pin(pin: Path) -> bool:
    try:
        pin.unlink()
    except FileNotFoundError:
        return False
    return True


def loaded() -> list[str]:
    """Instances pinned by transportlab (any run or `tlab bpf load`)."""
    if not _is_bpffs(PIN_DIR):
        return []
    return sorted(p.name for p in PIN_DIR.iterdir() if p.name.startswith(NAME_PREFIX))


def support_problem() -> str | None:
    """Why this machine cannot load the lab's BPF controls, or None."""
    from transportlab.network.libbpf import lib

    if not Path("/sys/kernel/btf/vmlinux").exists():
        return "the kernel has no BTF (/sys/kernel/btf/vmlinux): BPF struct_ops needs CONFIG_DEBUG_INFO_BTF"
    if os.geteuid() != 0:
        return "loading BPF congestion controls needs root"
    try:
        lib()
    except LibbpfError as e:
        return str(e)
    missing = [p.object_file for p in PROGRAMS.values() if not p.path().exists()]
    if missing:
        return f"{', '.join(missing)} not built in {OBJECT_DIR} (make -C bpf, or scripts/setup.sh)"
    return None
