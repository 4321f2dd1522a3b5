"""HTTP over kernel TCP as the studies ran it (docs/stacks.md): nginx (S0) or Hypercorn
(S1) serving a download to curl, as HTTP/1.1 in the clear (`http1`), HTTP/1.1 over TLS
(`https`) or HTTP/2 over TLS (`http2`). The one list the tcp kind checks scenario files
against and the web stack end runs."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from transportlab.stacks.quic import SETUP, StackMissing

AGENT = "agent"  # not HTTP: the lab's agents at both ends, speaking their own protocol
APPLICATIONS = ("http1", "https", "http2")
SERVERS = ("nginx", "hypercorn")
DEFAULT_SERVER = "nginx"
TLS = {"http1": False, "https": True, "http2": True}
# What each server writes to its stderr once it serves.
READY_LINE = {"nginx": "using inherited sockets", "hypercorn": "Running on"}
CURL_VERSION_FLAG = {"http1": "--http1.1", "https": "--http1.1", "http2": "--http2"}


def nginx_program() -> str:
    path = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if path is None:
        raise StackMissing(f"nginx is not installed; run {SETUP} (it installs Debian's nginx-light)")
    return path


def curl_program() -> str:
    path = shutil.which("curl")
    if path is None:
        raise StackMissing(f"curl is not installed; run {SETUP} (it installs Debian's curl)")
    return path


def hypercorn_argv() -> list[str]:
    import importlib.util

    if importlib.util.find_spec("hypercorn") is None:
        raise StackMissing(f"hypercorn: the Python package is not installed; run {SETUP} (it installs it from PyPI)")
    return [sys.executable, "-m", "hypercorn"]


def nginx_conf(work: Path, port: int, application: str, cert: Path, key: Path) -> str:
    """A configuration of its own for one server: one worker (the studies' servers were
    not tuned), root the run's folder of files, TLS 1.3 where the application has TLS."""
    listen = f"{port}" + (" ssl" if TLS[application] else "") + (" http2" if application == "http2" else "")
    tls = f"ssl_certificate {cert}; ssl_certificate_key {key}; ssl_protocols TLSv1.3;" if TLS[application] else ""
    temp = " ".join(f"{k}_temp_path {work / 'tmp' / k};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return f"""user root;
worker_processes 1;
daemon off;
pid {work / "nginx.pid"};
error_log stderr;
events {{ worker_connections 64; }}
http {{
    access_log off;
    sendfile on;
    {temp}
    server {{
        listen {listen};
        {tls}
        root {work / "www"};
    }}
}}
"""


def server_argv(
    server: str, application: str, work: Path, fd: int, port: int, cert: Path, key: Path
) -> tuple[list[str], dict[str, str]]:
    """The server's command and environment, serving on the inherited listening socket
    `fd` (bound to `port`)."""
    if server == "nginx":
        conf = work / "nginx.conf"
        conf.write_text(nginx_conf(work, port, application, cert, key))
        # nginx takes over listening sockets named in NGINX (its binary-upgrade
        # mechanism) that match a listen directive.
        return [nginx_program(), "-e", "stderr", "-p", str(work), "-c", str(conf)], {"NGINX": f"{fd};"}
    argv = hypercorn_argv() + ["--bind", f"fd://{fd}", "--workers", "1"]
    if TLS[application]:
        argv += ["--certfile", str(cert), "--keyfile", str(key)]
    return argv + ["transportlab.stacks.hypercorn_app:app"], {}


def client_argv(application: str, address: str, n: int, duration: float | None, objects: int = 1) -> list[str]:
    """curl fetching `objects` times /n, one after another on one connection, writing one
    JSON line of its measurements per transfer."""
    scheme = "https" if TLS[application] else "http"
    argv = [curl_program(), "-sS", "-k", "-w", "%{json}\\n", CURL_VERSION_FLAG[application]]
    if duration:
        argv += ["--max-time", f"{duration:.6f}"]
    for _ in range(objects):
        argv += ["-o", "/dev/null", f"{scheme}://{address}/{n}"]
    return argv
