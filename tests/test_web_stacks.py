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


def test_an_arm_may_step_between_the_agent_and_http(tmp_path):
    """application and http_server have real defaults ("agent", "nginx"), which say
    nothing on a flow they do not concern, so one sweep axis can name them on every arm."""
    (f,) = load(tmp_path, 'application = "agent"\nhttp_server = "nginx"\ntls = true\nmss = 1280').flows
    assert (f.application, f.tls) == ("agent", True)
    (f,) = load(tmp_path, 'application = "http2"\nimplementation = "linux"\ntls = false\nmss = 1280\nbytes = 5').flows
    assert (f.application, f.mss) == ("http2", 1280)


def test_an_http_flow_is_a_download_served_by_nginx_unless_told(tmp_path):
    (f,) = load(tmp_path, 'application = "https"\nbytes = "1MB"').flows
    assert (f.application, f.http_server, f.direction, f.cc) == ("https", "nginx", "download", "cubic")
    (f,) = load(tmp_path, 'application = "http2"\nhttp_server = "hypercorn"\ncc = "bbr"\nstop = "5s"').flows
    assert (f.http_server, f.cc) == ("hypercorn", "bbr")


@pytest.mark.parametrize(
    "flow, expected",
    [
        (
            'application = "http3"',
            r'flows\.web\.application: a tcp flow\'s application is "agent" \(the lab\'s agents\) or HTTP: http1, https, http2',
        ),
        ('http_server = "hypercorn"', r"flows\.web\.http_server: http_server serves HTTP: set application too"),
        (
            'application = "https"\nimplementation = "libutp"',
            r"flows\.web\.implementation: kernel TCP is the one implementation",
        ),
        (
            'application = "http1"\nhttp_server = "apache"',
            r"flows\.web\.http_server: the HTTP server is nginx or hypercorn",
        ),
        (
            'application = "https"\ntls = true',
            r"flows\.web\.tls: tls is not a field of an HTTP flow \(https and http2 are over TLS\)",
        ),
        (
            'application = "http1"\npage = { primary = "100kB" }',
            r"flows\.web\.page: page is not a field of an HTTP flow",
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


def test_http_objects_are_fetched_one_after_another_by_one_curl(tmp_path):
    s = load(tmp_path, 'application = "http1"\nobjects = { count = 10, size = "100kB" }')
    (f,) = resolve(s).flows
    ends = kind("tcp").endpoints(f, "10.0.0.2", Files.of(tmp_path, "web"), 17.0)
    assert ends.client[ends.client.index("--objects") + 1] == "10"
    assert ends.client[ends.client.index("--bytes") + 1] == "100000"


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
