"""A live emulated network: one namespace per host with its TUN device, the engine
forwarding between them, commands started inside hosts, and a teardown that always
runs (success, error, SIGINT, SIGTERM) and leaves nothing behind."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from transportlab.locations import binary
from transportlab.network import kernel_cc, netns, veth
from transportlab.network.buffers import buffer_sysctls
from transportlab.network.cpus import CpuClaim, claim_engine_cpu
from transportlab.network.registry import RunRecord, new_record
from transportlab.network.tun import open_tun
from transportlab.plan.topology import Topology
from transportlab.processes import terminate

TUN_MTU = 1500
# How hosts attach to the engine unless a run says otherwise (TLAB_ATTACH): "veth" (the
# engine reads AF_PACKET rings whose frames carry the kernel's receive timestamp, so its
# own wake-up never delays an arrival: bench/engine measures it closer to the floor than
# TUN) or "tun" (arrival = when the engine read the TUN device).
DEFAULT_ATTACH = os.environ.get("TLAB_ATTACH", "veth")
# With veth hosts on a machine of two or more CPUs: the engine's forwarding thread is
# pinned to one CPU and the hosts' receive processing steered (RPS) to the others, so
# handing a packet to a host does not run that host's stack in the engine's thread
# (TLAB_RPS=off: neither; bench/engine measures both).
DEFAULT_RPS = os.environ.get("TLAB_RPS", "on") != "off"

# While a network is live, the machine's CPUs are kept out of idle states slower to leave
# than this many µs (a PM QoS CPU latency request through /dev/cpu_dma_latency, held by
# the runner for the network's life and dropped by the kernel when the descriptor closes,
# however the runner ends). At 0 an idle CPU polls instead of halting, so a host woken by
# a packet the engine hands over after a quiet second is not woken from a halted vCPU
# (bench/engine measures both; docs/architecture.md, "What this machine kind does").
# TLAB_CPU_LATENCY=off: no request.
CPU_LATENCY_DEVICE = Path("/dev/cpu_dma_latency")
_cpu_latency = os.environ.get("TLAB_CPU_LATENCY", "0")
DEFAULT_CPU_LATENCY_US: int | None = None if _cpu_latency == "off" else int(_cpu_latency)
# TLAB_PIN_HOSTS=on runs the hosts' processes (agents, stacks) on the hosts' CPUs — all
# but the engine's — instead of anywhere. Measured (bench/engine, sparse rows) and not the
# default: it removed some > 1 ms stalls of sparse probes, but the added delay did not fall
# and the hosts' stacks sharing the remaining CPU cut a 2 Gbit/s flow to 0.81 of the link.
DEFAULT_PIN_HOSTS = os.environ.get("TLAB_PIN_HOSTS", "off") == "on"
# While nothing crosses the network for this long, the engine sends each host a frame its
# stack discards, once per interval, so the next hand-over does not find a path left cold
# for 100 ms or a second (docs/architecture.md, "What this machine kind does"; the engine's
# `warm_interval_ns`). TLAB_WARM_US=0: off.
DEFAULT_WARM_US = os.environ.get("TLAB_WARM_US", "5000")
# The TUN device's packet ring: if the engine falls behind for a moment, the host's
# packets wait here instead of being dropped (a drop here is an unintended drop).
TUN_TXQUEUELEN = 10_000
ENGINE_READY_TIMEOUT_S = 10.0
STOP_GRACE_S = 3.0
ENGINE_STOP_GRACE_S = 120.0


def _warm_us(value: str) -> float:
    """`TLAB_WARM_US`: the warm-up interval in µs (0: off)."""
    try:
        us = float(value)
    except ValueError:
        us = -1.0
    if not us >= 0 or us == float("inf"):
        raise NetworkError(f"TLAB_WARM_US must be a number of µs, 0 or more (0: no warm-up frames), not {value!r}")
    return us


class NetworkError(RuntimeError):
    pass


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so `with Network(...)` tears down."""


_HANDLER_PID = os.getpid()


def _raise_terminated(signum, frame):
    # Forked helpers (pyroute2 forks to open sockets inside a namespace) inherit this
    # handler; they must just exit, not unwind the parent's stack in a copy of it.
    if os.getpid() != _HANDLER_PID:
        os._exit(128 + signum)
    raise _Terminated()


class Network:
    """Use as a context manager: `with Network(topology, workdir) as net: net.popen(...)`."""

    def __init__(
        self,
        topology: Topology,
        workdir: Path,
        seed: int = 1,
        run_id: str | None = None,
        sysctls: dict[str, dict[str, str]] | None = None,
        spin_us: float = 20.0,
        realtime_priority: int | None = 10,
        attach: str | None = None,
        capture: tuple[int, tuple[str, ...]] | None = None,
        rps: bool | None = None,
        cpu_latency_us: int | None | str = "default",
        pin_hosts: bool | None = None,
        warm_us: float | None = None,
    ):
        self.topology = topology
        self.pin_hosts = DEFAULT_PIN_HOSTS if pin_hosts is None else pin_hosts
        self.warm_us = _warm_us(DEFAULT_WARM_US) if warm_us is None else warm_us
        # µs (None: no request); see DEFAULT_CPU_LATENCY_US.
        self.cpu_latency_us = DEFAULT_CPU_LATENCY_US if cpu_latency_us == "default" else cpu_latency_us
        self._cpu_latency_fd: int | None = None
        # (snaplen, direction names): the engine writes `capture_path` (pcapng).
        self.capture = capture
        self.workdir = Path(workdir)
        self.seed = seed
        self.run_id = run_id or secrets.token_hex(3)
        self.host_sysctls = sysctls or {}
        self.spin_us = spin_us
        self.realtime_priority = realtime_priority
        self.attach = attach or DEFAULT_ATTACH
        if self.attach not in ("veth", "tun", "floor"):
            raise NetworkError(f"attach must be 'veth', 'tun' or 'floor', not {self.attach!r}")
        if self.attach == "floor" and len(topology.hosts) != 2:
            raise NetworkError("the floor (a plain veth pair, no engine) joins exactly two hosts")
        self._attach_config: dict[str, dict] = {}
        self._steer = (DEFAULT_RPS if rps is None else rps) and self.attach == "veth"
        # The engine's CPU and the hosts' receive CPUs (None: no pinning, no steering),
        # chosen at start among the CPUs other live engines have not claimed.
        self.engine_cpu: int | None = None
        self.host_cpus: set[int] = set()
        self._cpu_claim: CpuClaim | None = None
        self.record: RunRecord = new_record(self.run_id)
        self._tun_fds: dict[str, int] = {}
        self._engine: subprocess.Popen | None = None
        self._children: list[subprocess.Popen] = []
        # What signal.signal() returns: the handler before ours.
        self._old_sigterm: Callable[[int, FrameType | None], Any] | int | None = None
        self.engine_stats: dict | None = None

    # -- names -------------------------------------------------------------------
    def namespace(self, host: str) -> str:
        return f"tlab-{self.run_id}-{host}"

    def tun_name(self, host: str) -> str:
        """The host's interface: its TUN device, or its end of the veth pair."""
        if self.attach in ("veth", "floor"):
            return f"tlab{self.run_id}h{self.topology.hosts.index(host)}"
        return f"tlab{self.run_id}{self.topology.hosts.index(host)}"

    def engine_ifname(self, host: str) -> str:
        return f"tlab{self.run_id}e{self.topology.hosts.index(host)}"

    @property
    def engine_namespace(self) -> str:
        return f"tlab-{self.run_id}-engine"

    def address(self, host: str) -> str:
        return self.topology.address(host)

    @property
    def log_path(self) -> Path:
        return self.workdir / "packets.tlog"

    @property
    def stats_path(self) -> Path:
        return self.workdir / "engine.json"

    @property
    def capture_path(self) -> Path:
        return self.workdir / "capture.pcapng"

    # -- lifecycle ---------------------------------------------------------------
    def __enter__(self) -> Network:
        global _HANDLER_PID
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            _HANDLER_PID = os.getpid()
            self._old_sigterm = signal.signal(signal.SIGTERM, _raise_terminated)
        try:
            self.start()
        except BaseException:
            self.stop()
            self._restore_signals()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.stop()
        finally:
            self._restore_signals()
        if exc_type is _Terminated:
            raise SystemExit(128 + signal.SIGTERM)

    def _restore_signals(self) -> None:
        if self._old_sigterm is not None:
            signal.signal(signal.SIGTERM, self._old_sigterm)
            self._old_sigterm = None

    def start(self) -> None:
        if os.geteuid() != 0:
            raise NetworkError("building the emulated network needs root (namespaces and TUN devices)")
        engine_bin = binary("tlab-engine")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.record.save()
        self._hold_cpu_latency()
        if self._steer:
            self._pin_engine()
        if self.attach == "veth":
            self.record.namespaces.append(self.engine_namespace)
            self.record.save()
            netns.create(self.engine_namespace)
            netns.set_sysctls(
                self.engine_namespace,
                {
                    "net.ipv6.conf.all.disable_ipv6": "1",
                    "net.ipv6.conf.default.disable_ipv6": "1",
                    "net.ipv4.ip_forward": "0",
                },
                "engine",
            )
        for host in self.topology.hosts:
            self._create_host(host)
        if self.attach == "floor":
            # The floor's hosts share the CPUs a live network's hosts get (all but the
            # engine's, the first), so the two are compared on the same footing.
            cpus = sorted(os.sched_getaffinity(0))
            self.host_cpus = set(cpus[1:]) if len(cpus) > 1 else set()
            return self._create_floor()
        attach = self._attach_config if self.attach == "veth" else self._tun_fds
        config = self.topology.engine_config(attach, self.seed, str(self.log_path), str(self.stats_path))
        if self.attach == "veth":
            config["netns"] = self.engine_namespace
            config["mtu"] = TUN_MTU
        if self.capture is not None:
            snaplen, names = self.capture
            index = {name: i for i, (name, _) in enumerate(self.topology.directions())}
            config["capture"] = {
                "path": str(self.capture_path),
                "snaplen": snaplen,
                "directions": [index[n] for n in names],
            }
        config["spin_ns"] = int(self.spin_us * 1000)
        if self.attach == "veth":  # a TUN host has no hand-over path to warm
            config["warm_interval_ns"] = int(self.warm_us * 1000)
        config["realtime_priority"] = self.realtime_priority
        config["cpu"] = self.engine_cpu
        config_path = self.workdir / "engine-config.json"
        config_path.write_text(json.dumps(config, indent=1))
        # The engine keeps the file after we close our copy of the descriptor.
        stderr = open(self.workdir / "engine.stderr", "wb")  # noqa: SIM115
        self._engine = subprocess.Popen(
            [str(engine_bin), str(config_path)],
            # stdin: the control input (`set_t0`).
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            pass_fds=list(self._tun_fds.values()),
            start_new_session=True,
        )
        stderr.close()
        self.record.add_process(self._engine.pid, str(engine_bin))
        self._wait_ready(self._engine, "engine", ENGINE_READY_TIMEOUT_S, self.workdir / "engine.stderr")

    def _hold_cpu_latency(self) -> None:
        """Opens the CPU latency request for the network's life (closed in `stop`)."""
        if self.cpu_latency_us is None:
            return
        try:
            fd = os.open(CPU_LATENCY_DEVICE, os.O_WRONLY | os.O_CLOEXEC)
        except OSError as e:
            raise NetworkError(
                f"cannot hold a CPU latency of {self.cpu_latency_us} µs ({CPU_LATENCY_DEVICE}: {e.strerror}); "
                "TLAB_CPU_LATENCY=off runs without (sparse traffic then wakes halted CPUs: docs/architecture.md)"
            ) from None
        os.write(fd, int(self.cpu_latency_us).to_bytes(4, "little", signed=True))
        self._cpu_latency_fd = fd

    def _create_host(self, host: str) -> None:
        ns = self.namespace(host)
        self.record.namespaces.append(ns)
        self.record.save()
        netns.create(ns)
        sysctls = {
            # No IPv6: its neighbour and router solicitations would be noise on the links.
            "net.ipv6.conf.all.disable_ipv6": "1",
            "net.ipv6.conf.default.disable_ipv6": "1",
            **buffer_sysctls(self.topology, host),
            **self.host_sysctls.get(host, {}),
        }
        netns.set_sysctls(ns, sysctls, host)
        ifname = self.tun_name(host)
        if self.attach == "veth":
            return self._create_veth(host, ns, ifname)
        if self.attach == "floor":
            return
        self.record.tun_devices.append(ifname)
        self.record.save()
        self._tun_fds[host] = open_tun(ifname)
        netns.move_link(ifname, ns)
        netns.configure_tun(ns, ifname, self.address(host), TUN_MTU, TUN_TXQUEUELEN)

    def _create_veth(self, host: str, ns: str, host_if: str) -> None:
        i = self.topology.hosts.index(host)
        engine_if = self.engine_ifname(host)
        host_mac, engine_mac = veth.mac("host", i), veth.mac("engine", i)
        self.record.veth_devices += [host_if, engine_if]
        self.record.save()
        veth.create_pair(host_if, engine_if, host_mac, engine_mac, TUN_MTU)
        netns.move_link(host_if, ns)
        netns.move_link(engine_if, self.engine_namespace)
        veth.configure_host(ns, host_if, self.address(host), engine_mac)
        veth.configure_engine_end(self.engine_namespace, engine_if)
        if self.engine_cpu is not None:
            veth.steer_receive(ns, host_if, self.host_cpus)
        self._attach_config[host] = {"kind": "veth", "ifname": engine_if, "mac": engine_mac, "peer_mac": host_mac}

    def _create_floor(self) -> None:
        """The no-emulator floor: the two hosts joined by a plain veth pair (offloads
        off as on the engine's links), against which the engine's added delay is measured."""
        a, b = self.topology.hosts
        ifs = [self.tun_name(a), self.tun_name(b)]
        macs = [veth.mac("host", 0), veth.mac("host", 1)]
        self.record.veth_devices += ifs
        self.record.save()
        veth.create_pair(ifs[0], ifs[1], macs[0], macs[1], TUN_MTU)
        for i, host in enumerate((a, b)):
            netns.move_link(ifs[i], self.namespace(host))
        for i, host in enumerate((a, b)):
            ns, peer = self.namespace(host), (b, a)[i]
            veth.configure_host(ns, ifs[i], self.address(host), macs[1 - i], gateway=self.address(peer))

    @staticmethod
    def _wait_ready(proc: subprocess.Popen, what: str, timeout: float, stderr_path: Path | None = None) -> str:
        """Waits for the `READY ...` line a server prints once it is listening."""
        line = _read_line(proc, timeout)
        if not line.startswith(b"READY"):
            detail = ""
            if stderr_path and stderr_path.exists():
                detail = stderr_path.read_text(errors="replace").strip()
            raise NetworkError(f"{what} did not start (exit {proc.poll()}): {detail or 'no READY line'}")
        return line.decode().strip()

    def set_t0(self, t0_ns: int) -> None:
        """Tells the engine the scenario's time 0 (CLOCK_MONOTONIC ns): its trace-driven
        links start their traces there (at their `trace_offset`), and waits until it has.
        Nothing to do on the floor (no engine)."""
        if self._engine is None:
            return
        assert self._engine.stdin is not None  # started with stdin=PIPE
        self._engine.stdin.write(f"t0 {t0_ns}\n".encode())
        self._engine.stdin.flush()
        line = _read_line(self._engine, ENGINE_READY_TIMEOUT_S)
        if line.strip() != f"T0 {t0_ns}".encode():
            detail = (self.workdir / "engine.stderr").read_text(errors="replace").strip()
            raise NetworkError(
                f"the engine did not take time 0 (exit {self._engine.poll()}, said {line!r}): {detail or 'nothing'}"
            )

    def popen(self, host: str, argv: list[str], **kwargs) -> subprocess.Popen:
        """Starts `argv` inside `host`; it is stopped at teardown if still running."""
        if host not in self.topology.hosts:
            raise NetworkError(f"no host {host!r}")
        command = argv
        if self.pin_hosts and self.host_cpus:
            # `taskset` execs in place, as `ip netns exec` does: the PID stays the command's.
            command = ["taskset", "-c", ",".join(map(str, sorted(self.host_cpus))), *argv]
        proc = subprocess.Popen(netns.exec_argv(self.namespace(host), command), start_new_session=True, **kwargs)
        self._children.append(proc)
        self.record.add_process(proc.pid, argv[0])
        return proc

    def start_server(self, host: str, argv: list[str], stderr_path: Path, timeout: float = 10.0) -> subprocess.Popen:
        """Starts a server that prints `READY` when listening, and waits for it."""
        with open(stderr_path, "wb") as err:
            proc = self.popen(host, argv, stdout=subprocess.PIPE, stderr=err)
        self._wait_ready(proc, f"{Path(argv[0]).name} on {host}", timeout, stderr_path)
        return proc

    def run(self, host: str, argv: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
        proc = self.popen(host, argv, **kwargs)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            terminate(proc, STOP_GRACE_S)
            raise NetworkError(f"{argv[0]} on {host} did not finish within {timeout} s") from None
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def load_kernel_cc(self, controller: str, params: dict) -> str:
        """Registers the lab's BPF congestion control `controller` with `params` for this
        run (once per distinct parameter set) and returns its kernel name, which a TCP
        socket selects with TCP_CONGESTION. Unregistered at teardown."""
        name = kernel_cc.instance_name(controller, params, salt=self.run_id)
        if name in self.record.kernel_ccs:
            return name
        self.record.kernel_ccs.append(name)
        self.record.save()
        try:
            kernel_cc.load(name, controller, params)
        except kernel_cc.KernelCcError as e:
            raise NetworkError(str(e)) from None
        return name

    def _unload_kernel_ccs(self) -> None:
        left = []
        for name in self.record.kernel_ccs:
            try:
                kernel_cc.unload(name)
            except kernel_cc.KernelCcError as e:  # teardown goes on; `tlab clean` retries
                print(f"warning: {e}", file=sys.stderr)
                left.append(name)
        self.record.kernel_ccs = left

    def _attached_hosts(self) -> list[str]:
        """The hosts attached to the engine (through TUN devices or veth pairs)."""
        return list(self._tun_fds or self._attach_config)

    def _tun_drops(self) -> dict[str, int]:
        drops = {}
        for host in self._attached_hosts():
            try:
                drops[host] = netns.tx_dropped(self.namespace(host), self.tun_name(host))
            except Exception as e:  # teardown goes on; the count is then unknown
                drops[host] = -1
                print(f"warning: could not read TUN statistics of {host}: {e}", file=sys.stderr)
        return drops

    def _host_udp_counters(self) -> dict[str, dict[str, int]]:
        """Each host's UDP counters at the end of the run (its namespace's
        /proc/net/snmp): datagrams its sockets received and dropped, RcvbufErrors being the
        ones a full socket receive buffer turned away — losses on the host, not the links."""
        counters = {}
        for host in self._attached_hosts():
            try:
                counters[host] = netns.snmp(self.namespace(host))["Udp"]
            except Exception as e:  # teardown goes on; the counters are then not recorded
                print(f"warning: could not read the UDP counters of {host}: {e}", file=sys.stderr)
        return counters

    def _pin_engine(self) -> None:
        """Claims the engine a CPU of its own and steers the hosts' receive work to the
        others; with one CPU, or every CPU held by other runs' engines, neither (said on
        stderr: parallel runs then share CPUs with each other's forwarding threads)."""
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            return
        self._cpu_claim = claim_engine_cpu(cpus)
        if self._cpu_claim is None:
            print(
                f"warning: run {self.run_id}: every CPU ({len(cpus)}) already holds another run's "
                "forwarding thread; this run's engine is not pinned and its hosts not steered "
                "(fewer parallel runs than CPUs keep each engine on a CPU of its own)",
                file=sys.stderr,
            )
            return
        self.engine_cpu = self._cpu_claim.cpu
        self.host_cpus = set(cpus) - {self.engine_cpu}

    def stop(self) -> None:
        """Tears everything down; safe to call twice and after a partial start."""
        for proc in self._children:
            terminate(proc, STOP_GRACE_S)
        self._children.clear()
        tun_drops = self._tun_drops()
        udp = self._host_udp_counters()
        if udp:
            try:
                (self.workdir / netns.HOST_UDP_COUNTERS).write_text(json.dumps(udp, indent=1))
            except OSError as e:  # teardown goes on; the counters are then not recorded
                print(f"warning: could not write {netns.HOST_UDP_COUNTERS}: {e}", file=sys.stderr)
        if self._engine is not None:
            # The engine writes its statistics, then flushes its packet log and capture;
            # a log writer that fell behind (a saturated machine) needs the time.
            terminate(self._engine, ENGINE_STOP_GRACE_S)
            for pipe in (self._engine.stdin, self._engine.stdout):
                if pipe:
                    pipe.close()
            self._engine = None
            if self.stats_path.exists():
                self.engine_stats = json.loads(self.stats_path.read_text())
                # TUN ring overflows happen in the kernel, before the engine sees a
                # packet: they are unintended drops too.
                self.engine_stats["unintended_drops"]["tun_queue_overflow"] = tun_drops
                self.engine_stats["unintended_drops_total"] += sum(v for v in tun_drops.values() if v > 0)
                self.engine_stats["cpu"] = self.engine_cpu
                self.engine_stats["cpu_latency_us"] = self.cpu_latency_us
                self.engine_stats["host_cpus"] = sorted(self.host_cpus) if self.pin_hosts else None
                self.stats_path.write_text(json.dumps(self.engine_stats, indent=1))
        for fd in self._tun_fds.values():
            os.close(fd)
        self._tun_fds.clear()
        for ns in self.record.namespaces:
            netns.remove(ns)
        for ifname in self.record.tun_devices + self.record.veth_devices:
            netns.remove_root_link(ifname)
        self._attach_config.clear()
        if self._cpu_claim is not None:
            self._cpu_claim.release()
            self._cpu_claim = None
        if self._cpu_latency_fd is not None:
            os.close(self._cpu_latency_fd)
            self._cpu_latency_fd = None
        self._unload_kernel_ccs()
        if self.record.kernel_ccs:
            self.record.save()  # what could not be unloaded stays for `tlab clean`
        else:
            self.record.remove()


def _read_line(proc: subprocess.Popen, timeout: float) -> bytes:
    """The next line `proc` writes to its stdout (a pipe), or b"" if none comes within
    `timeout` seconds or it exits first."""
    import selectors

    assert proc.stdout is not None  # started with stdout=PIPE
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sel.select(timeout=0.05):
                return proc.stdout.readline()
            if proc.poll() is not None:
                break
    return b""
