"""The third-party QUIC stacks a quic flow can run (`implementation`, docs/stacks.md): the
one list the flow kind checks scenario files against and the stack end runs. Each stack
is a real process per end speaking HTTP/3: GET /N answers N bytes, POST answers the
count of the body's bytes. quinn, the lab's own agent, is not here: it is the `agent`
binary's quic-server / quic-client."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from transportlab.locations import PROJECT_ROOT

QUINN = "quinn"
SETUP = "scripts/setup.sh"


@dataclass(frozen=True)
class Stack:
    name: str
    # The lab's controller names → the stack's own (a name the stack lacks is refused).
    controllers: dict[str, str]
    default_cc: str
    bulk_upload: bool  # an upload for a duration (a download for one every stack does)
    install: str  # what to install when it is missing
    # How its qlog's times map to CLOCK_MONOTONIC (artefacts.qlog.QlogClock): "epoch"
    # (a wall-clock reference in the header), "absolute" (event times are epoch ms) or
    # "file" (no reference: the moment its qlog file appeared, watched by the stack end).
    qlog_clock: str
    # Columns its qlog cannot give (left empty in the series), for the docs and tests.
    silent: tuple[str, ...] = field(default=())
    # Whether the lab can switch its pacer off (a flow's `pacing = false`).
    pacer_switch: bool = False
    # Whether the lab can size its UDP receive buffer (a flow's `rcvbuf`).
    rcvbuf_switch: bool = False

    def executable(self) -> list[str]:
        """The stack's command (its program and any fixed leading arguments); raises
        StackMissing naming what to install."""
        raise NotImplementedError


class StackMissing(RuntimeError):
    pass


class _QuicGo(Stack):
    def executable(self) -> list[str]:
        from transportlab.locations import binary

        try:
            return [str(binary("tlab-quic-go"))]
        except FileNotFoundError:
            raise StackMissing(f"quic-go: tlab-quic-go is not built; {self.install}") from None


class _Aioquic(Stack):
    def executable(self) -> list[str]:
        if not _importable("aioquic"):
            raise StackMissing(f"aioquic: the Python package is not installed; {self.install}")
        return [sys.executable, "-m", "transportlab.stacks.aioquic_endpoint"]


class _Ngtcp2(Stack):
    def executable(self) -> list[str]:
        return []  # two programs: client() / server()

    @staticmethod
    def program(end: str, install: str) -> str:
        name = "gtlsserver" if end == "server" else "gtlsclient"
        path = shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None)
        if path is None:
            raise StackMissing(f"ngtcp2: {name} is not installed; {install}")
        return path


STACKS: dict[str, Stack] = {
    s.name: s
    for s in (
        _QuicGo(
            "quic-go",
            {"newreno": "reno"},
            "newreno",
            bulk_upload=True,
            install=f"run {SETUP} (it builds endpoints/quic-go with `go build`)",
            qlog_clock="epoch",
        ),
        _Aioquic(
            "aioquic",
            {"newreno": "reno", "cubic": "cubic"},
            "newreno",
            bulk_upload=True,
            install=f"run {SETUP} (it installs aioquic from PyPI)",
            qlog_clock="absolute",
            silent=("congestion_events",),
            pacer_switch=True,
            rcvbuf_switch=True,
        ),
        _Ngtcp2(
            "ngtcp2",
            {"newreno": "reno", "cubic": "cubic", "bbr": "bbr", "bbr2": "bbr2"},
            "cubic",
            # Its client uploads a file (--data): the size is known in advance.
            bulk_upload=False,
            install=f"run {SETUP} (it installs Debian's ngtcp2-client and ngtcp2-server)",
            qlog_clock="file",
            silent=("congestion_events",),
        ),
    )
}
IMPLEMENTATIONS = (QUINN, *STACKS)


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@cache
def version(name: str) -> str | None:
    """The stack's version as installed (None if it cannot be told)."""
    try:
        if name == "aioquic":
            import aioquic

            return str(aioquic.__version__)
        if name == "ngtcp2":
            out = subprocess.run(
                ["dpkg-query", "-W", "-f=${Version}", "ngtcp2-client"], capture_output=True, text=True, timeout=10
            )
            return out.stdout.strip() or None
        if name == "quic-go":
            mod = PROJECT_ROOT / "endpoints" / "quic-go" / "go.mod"
            for line in mod.read_text().splitlines():
                if "github.com/quic-go/quic-go " in line:
                    return line.split()[-1]
    except (OSError, subprocess.SubprocessError, ImportError):
        return None
    return None
