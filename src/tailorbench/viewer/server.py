"""The viewer's local server: the stdlib's ThreadingHTTPServer over a built `Site` (so `tailor view` needs no
extra install), answering GET and HEAD for the site's files only, each with a strict Content-Security-Policy.
Loopback unless the caller allows another host."""

from __future__ import annotations

import ipaddress
import mimetypes
import socket
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from tailorbench.errors import ConfigError
from tailorbench.viewer.site import Site

CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:"
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}


def is_loopback(host: str) -> bool:
    """`localhost` or a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_host(host: str, allow_remote: bool) -> None:
    if not is_loopback(host) and not allow_remote:
        raise ConfigError(f"--host {host} is not a loopback address: the viewer shows every prompt and answer of "
                          "the runs to whoever reaches it; add --allow-remote to serve it there anyway")


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "tailor-view"
        sys_version = ""

        def _send(self, body: bool) -> None:
            name = urlsplit(self.path).path.lstrip("/") or "index.html"
            data = site.files.get(name)
            code = HTTPStatus.OK
            if data is None:
                code, data, name = HTTPStatus.NOT_FOUND, b"no such file in this viewer\n", "404.txt"
            kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
            self.send_response(code)
            self.send_header("Content-Type", f"{kind}; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for key, value in HEADERS.items():
                self.send_header(key, value)
            self.end_headers()
            if body:
                self.wfile.write(data)

        def do_GET(self) -> None:
            self._send(True)

        def do_HEAD(self) -> None:
            self._send(False)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: the page's requests are not news

    return Handler


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True
    #: a page opens a dozen fetches at once (the run's tables, the cases); socketserver's backlog of 5 refuses
    #: connections when the accept thread waits for a CPU
    request_queue_size = 128

    def __init__(self, site: Site, host: str = "127.0.0.1", port: int = 0) -> None:
        if ":" in host:
            self.address_family = socket.AF_INET6
        super().__init__((host, port), _handler(site))

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        text = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{text}]" if ":" in text else text
        return f"http://{shown}:{port}/"
