"""Tiny local HTTP(S) servers standing in for nodes: each answers from a
script and records every request that reached it (after the TLS handshake
and the request line: a client that refuses the handshake leaves no record).
"""
from __future__ import annotations

import http.client
import http.server
import json
import ssl
import threading
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple, Union

Answer = Union[str, Tuple[int, Dict[str, str], object]]  # "drop", or (status, headers, body)


@dataclass
class Seen:
    method: str
    path: str
    headers: Dict[str, str]
    body: bytes

    def json(self):
        return json.loads(self.body) if self.body else None


class FakeNode:
    """A node on HOST:0 (TLS with cert/key, or plaintext). ``answer(seen,
    n)`` says what to answer the n-th request (0-based): ``(status, headers,
    body)`` (a dict/list body is sent as JSON) or ``"drop"`` (read the
    request, close without an answer)."""

    def __init__(self, answer: Callable[[Seen, int], Answer], cert: Optional[Tuple[str, str]] = None,
                 host: str = "127.0.0.1") -> None:
        self.requests: List[Seen] = []
        self.handshake_failures = 0
        node = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _any(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with node.lock:
                    n = len(node.requests)
                    node.requests.append(seen)
                a = answer(seen, n)
                if a == "drop":
                    self.close_connection = True
                    return
                status, headers, payload = a  # type: ignore[misc]
                data = payload if isinstance(payload, bytes) else (
                    json.dumps(payload).encode() if payload is not None else b"")
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                if data and not any(k.lower() == "content-type" for k in headers):
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = True

            do_GET = do_POST = do_PUT = do_DELETE = _any

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                node.handshake_failures += 1

        self.lock = threading.Lock()
        self.server = Server((host, 0), Handler)
        self.tls = cert is not None
        if cert:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*cert)
            self._ctx = ctx

            # The handshake in the request's own thread (not in accept).
            def get_request(orig=self.server.get_request):
                sock, addr = orig()
                return ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

            self.server.get_request = get_request  # type: ignore[assignment]

            def finish_handshake(request, client_address, orig=self.server.process_request_thread):
                try:
                    request.do_handshake()
                except (ssl.SSLError, OSError):
                    node.handshake_failures += 1
                    self.server.shutdown_request(request)
                    return
                orig(request, client_address)

            self.server.process_request_thread = finish_handshake  # type: ignore[assignment]
        self.host = host
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.address}"

    def __enter__(self) -> "FakeNode":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def always(status: int, body: object = None, headers: Optional[Dict[str, str]] = None):
    return lambda seen, n: (status, headers or {}, body)


def sequence(*answers: Answer):
    """The n-th request gets answers[n] (the last one from then on)."""
    return lambda seen, n: answers[min(n, len(answers) - 1)]


class ForwardingProxy(FakeNode):
    """A TLS front of a real node: forwards each request to ``target``
    (HOST:PORT, verified with ``ca``) and relays the answer, except that the
    n-th request for which ``drop(seen, n)`` is true is forwarded and its
    answer thrown away (the connection closed): the node did the work, the
    client never heard."""

    def __init__(self, target: str, ca: str, cert: Tuple[str, str], drop: Callable[[Seen, int], bool]) -> None:
        host, port = target.rsplit(":", 1)
        self.forwarded_answers: List[Tuple[int, bytes]] = []

        def answer(seen: Seen, n: int) -> Answer:
            conn = http.client.HTTPSConnection(host, int(port), timeout=10,
                                               context=ssl.create_default_context(cafile=ca))
            headers = {k: v for k, v in seen.headers.items() if k not in ("host", "connection")}
            conn.request(seen.method, seen.path, body=seen.body or None, headers=headers)
            r = conn.getresponse()
            data = r.read()
            conn.close()
            self.forwarded_answers.append((r.status, data))
            if drop(seen, n):
                return "drop"
            return (r.status, {k: v for k, v in r.getheaders()
                               if k.lower() not in ("content-length", "connection", "transfer-encoding")}, data)

        super().__init__(answer, cert)
