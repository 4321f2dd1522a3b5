"""HTTP flows over kernel TCP (docs/stacks.md): what a scenario may ask and the command
lines of their ends."""

import re

import pytest

from one_flow import load_one_flow
from transportlab.kinds import Files, kind
from transportlab.plan.resolve import resolve
from transportlab.scenario import ScenarioError

LINK = 'rate = "10Mbit", delay = "10ms"'


def load(tmp_path, flow: str):
    return load_one_flow(tmp_path / "s.toml", flow, name="web", protocol="tcp", forward=LINK, reverse=LINK)


def test_an_http_flow_is_a_download_served_by_nginx_unless_told(tmp_path):
    (f,) = load(tmp_path, 'application = "https"\nbytes = "1MB"').flows
    assert (f.application, f.http_server, f.direction, f.cc) == ("https", "nginx", "download", "cubic")
    (f,) = load(tmp_path, 'application = "http2"\nhttp_server = "hypercorn"\ncc = "bbr"\nstop = "5s"').flows
    assert (f.http_server, f.cc) == ("hypercorn", "bbr")


@pytest.mark.parametrize(
    "flow, expected",
    [
        ('application = "http3"', r"flows\.web\.application: tcp HTTP is application http1, https, http2"),
        ('http_server = "nginx"', r"flows\.web\.http_server: tcp HTTP is application http1, https, http2"),
        (
            'application = "http1"\nhttp_server = "apache"',
            r"flows\.web\.http_server: the HTTP server is nginx or hypercorn",
        ),
        (
            'application = "https"\ntls = true',
            r"flows\.web\.tls: tls is not a field of an HTTP flow \(https and http2 are over TLS\)",
        ),
        (
            'application = "http1"\nobjects = { count = 2, size = "1MB" }',
            r"flows\.web\.objects: objects is not a field of an HTTP flow",
        ),
        ('application = "http1"\ndirection = "upload"', r"flows\.web\.direction: an HTTP flow is a download"),
        (
            'application = "http1"\ncc = "vegas"',
            r"flows\.web\.cc: TCP vegas is the lab's BPF program; nginx and curl run the kernel's own",
        ),
    ],
)
def test_what_an_http_flow_cannot_do_is_refused(tmp_path, flow, expected):
    with pytest.raises(ScenarioError) as info:
        load(tmp_path, flow)
    assert re.search(expected, str(info.value)), str(info.value)


def test_http_ends_are_the_web_stack_end(tmp_path):
    s = load(tmp_path, 'application = "http2"\nhttp_server = "hypercorn"\ncc = "reno"\nbytes = "2MB"')
    (f,) = resolve(s).flows
    ends = kind("tcp").endpoints(f, "10.0.0.2", Files.of(tmp_path, "web"), 17.0)
    assert "web-server" in ends.server and "web-client" in ends.client
    for argv in (ends.server, ends.client):
        assert argv[argv.index("--application") + 1] == "http2"
        assert argv[argv.index("--http-server") + 1] == "hypercorn"
        assert argv[argv.index("--cc") + 1] == "reno"
        assert argv[argv.index("--bytes") + 1] == "2000000"
