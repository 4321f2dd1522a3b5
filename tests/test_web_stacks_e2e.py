"""HTTP over kernel TCP end to end (docs/stacks.md): HTTP/1.1, HTTPS and HTTP/2 downloads
served by nginx and by Hypercorn to curl complete with the right byte count, speaking the
HTTP version asked for, and the runner's metrics account for them."""

import json

import pytest

from one_flow import one_flow_scenario
from tlab_cli import run_one

pytestmark = pytest.mark.netns

LINK = 'rate = "20Mbit", delay = "10ms", queue = { packets = 100 }'
SIZE = 2_000_000
CURL_VERSION = {"http1": "1.1", "https": "1.1", "http2": "2"}


@pytest.mark.parametrize("server", ["nginx", "hypercorn"])
@pytest.mark.parametrize("application", ["http1", "https", "http2"])
def test_http_download_through_a_web_server_and_curl(tmp_path, server, application):
    text = one_flow_scenario(
        f'application = "{application}"\nhttp_server = "{server}"\ncc = "reno"\nbytes = {SIZE}',
        name="web",
        forward=LINK,
        reverse=LINK,
        duration="20s",
        settings='stop_when = "flows-done"',
    )
    m, run_dir = run_one(tmp_path, text)
    flow = m["flows"]["web"]
    assert flow["complete"] is True and flow["direction"] == "download", flow
    client = json.loads((run_dir / "raw" / "web-client.json").read_text())["results"]
    assert client["bytes"] == SIZE and client["http_status"] == 200
    assert client["http_version"] == CURL_VERSION[application]
    server_summary = json.loads((run_dir / "raw" / "web-server.json").read_text())
    assert server_summary["results"]["http_server"] == server and server_summary["results"]["cc"] == "reno"
    # The link carried the body and the HTTP (and TLS) around it; goodput is below the link.
    assert flow["bytes_delivered"] > SIZE
    assert 0 < flow["goodput_bps"] < 20e6
    assert flow["completion_s"] is not None
    cpu = flow["cpu_s"]  # curl's and the web server's processes
    assert cpu["client_user"] + cpu["client_sys"] > 0 and cpu["server_user"] + cpu["server_sys"] > 0, cpu
