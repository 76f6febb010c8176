"""A fault-injecting HTTP proxy on 127.0.0.1, in front of a real OpenAI-compatible server.

Each request takes the next fault of a script (then "ok" once the script is spent) and
the proxy acts it out:

    ok         forward, answer as the server did
    500 502 503  that status, a JSON error body
    429        429 with `Retry-After: 1`
    timeout    hold the connection, answer nothing (the client's read timeout fires)
    reset      forward, send the headers and half the body, then reset the connection
    truncate   forward, announce the whole body, send half, close
    malformed  200 with a body that is not JSON
    reject_n   400 when the request asks for n > 1 (as a server without `n` support does),
               else forward
    down       close the connection at once, reading nothing (a server gone)

Once the script is spent every request takes `after` ("ok" unless set; "503" makes a server
that stays down until `after` is set back). `down_after_answers=K`: once the server has
answered K requests, every request gets 503 (until it is set back to None). `log` records (fault, path) per request;
`answered` holds the body of every request the server answered, in order.
"""

from __future__ import annotations

import http.client
import json
import socket
import struct
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

FAULTS = ("ok", "500", "502", "503", "429", "timeout", "reset", "truncate", "malformed", "reject_n", "down")


class FaultProxy:
    def __init__(self, upstream: str, script: list[str] | None = None, *, after: str = "ok", hold_s: float = 5.0,
                 down_after_answers: int | None = None):
        """`upstream`: the server's base URL (http://127.0.0.1:PORT/v1). `hold_s`: how long
        a `timeout` fault holds the connection."""
        for fault in [*(script or []), after]:
            if fault not in FAULTS:
                raise ValueError(f"unknown fault {fault!r}; choose from {FAULTS}")
        parts = urlsplit(upstream)
        self.upstream_host, self.upstream_port = parts.hostname, parts.port
        self.script = deque(script or [])
        self.after = after
        self.down_after_answers = down_after_answers
        self.hold_s = hold_s
        self.log: list[tuple[str, str]] = []
        self.answered: list[bytes] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                proxy._handle(self, b"")

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                proxy._handle(self, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- acting out one request

    def _next_fault(self, path: str) -> str:
        with self._lock:
            if self.down_after_answers is not None and len(self.answered) >= self.down_after_answers:
                fault = "503"
            else:
                fault = self.script.popleft() if self.script else self.after
            self.log.append((fault, path))
            return fault

    def _handle(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        fault = self._next_fault(handler.path)
        if fault == "down":
            _reset(handler.connection)
            handler.close_connection = True
            return
        if fault in ("500", "502", "503", "429"):
            headers = {"Retry-After": "1"} if fault == "429" else {}
            _answer(handler, int(fault), json.dumps({"error": {"message": f"injected {fault}"}}).encode(), headers)
            return
        if fault == "timeout":
            time.sleep(self.hold_s)
            handler.close_connection = True
            return
        if fault == "malformed":
            _answer(handler, 200, b'{"id": "x", "choices": [{"mess', {})
            return
        if fault == "reject_n" and json.loads(body or b"{}").get("n", 1) > 1:
            _answer(handler, 400, json.dumps({"error": {"message": "n > 1 is not supported"}}).encode(), {})
            return
        status, headers, payload = self._forward(handler, body)
        if fault in ("reset", "truncate"):  # the whole body announced, half of it sent
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload[: len(payload) // 2])
            handler.wfile.flush()
            if fault == "reset":
                _reset(handler.connection)
            handler.close_connection = True
            return
        _answer(handler, status, payload, {"Content-Type": headers.get("Content-Type", "application/json")})

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=600)
        try:
            connection.request(handler.command, handler.path, body=body or None,
                               headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            payload = response.read()
            if response.status == 200:
                with self._lock:
                    self.answered.append(body)
            return response.status, dict(response.getheaders()), payload
        except OSError as exc:  # the server itself is down: say so as a gateway would
            return 502, {}, json.dumps({"error": {"message": f"upstream: {exc}"}}).encode()
        finally:
            connection.close()


def _answer(handler: BaseHTTPRequestHandler, status: int, payload: bytes, headers: dict[str, str]) -> None:
    handler.send_response(status)
    headers = {"Content-Type": "application/json", **headers}
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)


def _reset(connection: socket.socket) -> None:
    """Close with a TCP RST (SO_LINGER 0), as a crashed peer or a middlebox does."""
    try:
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        connection.close()
    except OSError:
        pass
