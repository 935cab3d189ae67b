"""An HTTP server on the loopback that serves a real-posteriors mirror laid out as the upstream repositories
(``{repo}/raw/{commit}/{path}``, GitHub's raw layout), so the download path runs against a real server.

``faults`` make chosen files misbehave: "truncate" (the promised length, then half the bytes and a closed
connection), "alter" (one byte flipped), "missing" (404), "hang" (no answer until the server stops).
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from calib.data.registry import UPSTREAMS


class UpstreamServer:
    """A context manager: the server runs in a thread while the block runs; ``url`` is the address template."""

    def __init__(self, mirror: Path, faults: dict[str, str] | None = None):
        self.mirror, self.faults = Path(mirror), dict(faults or {})
        self.requests: list[tuple[str, str]] = []
        self._release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_HEAD(self):  # noqa: N802 - http.server's name
                self._answer(body=False)

            def do_GET(self):  # noqa: N802 - http.server's name
                self._answer(body=True)

            def _answer(self, body: bool):
                relpath = server.relpath(self.path)
                server.requests.append((self.command, relpath or self.path))
                fault = server.faults.get(relpath or "")
                if fault == "hang":
                    server._release.wait()
                    return
                file = server.mirror / relpath if relpath else None
                if fault == "missing" or file is None or not file.is_file():
                    self.send_error(404, "Not Found")
                    return
                data = file.read_bytes()
                if fault == "alter":
                    data = data[:-1] + bytes([data[-1] ^ 0xFF])
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if body:
                    self.wfile.write(data[: len(data) // 2] if fault == "truncate" else data)
                if fault == "truncate":
                    self.close_connection = True

            def log_message(self, *args):  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_port}/{{repo}}/raw/{{commit}}/{{path}}"

    def relpath(self, request_path: str) -> str | None:
        """The mirror-relative path a request names, or None for a path of no registered upstream."""
        for family, up in UPSTREAMS.items():
            prefix = f"/{up.repo}/raw/{up.commit}/{up.folder}/"
            if request_path.startswith(prefix):
                return f"{family}/{request_path[len(prefix) :]}"
        return None

    def __enter__(self) -> UpstreamServer:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


def closed_port_url() -> str:
    """An address template on a loopback port nothing listens on (connections are refused at once)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/{{repo}}/raw/{{commit}}/{{path}}"
