"""HTTPS to the nodes: verification, redirects, retries and failover.

One connection per request (as ``baton ctl``): nothing to go stale across a
failover. Rules:

* TLS always, verified against the configured CA (or the system's roots)
  and against the host dialed; TLS 1.2 or later.
* A 307/308 (a follower naming the leader) is followed only to an
  ``https://`` address, verified exactly like the first one, at most three
  hops; the ``Authorization`` header goes along (the new endpoint has
  proved it holds a certificate of the same CA for the name dialed before
  anything is sent). Anything else is refused (``RedirectRefused``).
* 429 and 503 are retried after ``Retry-After`` (or a backoff without one);
  a connection that fails moves on to the next configured address at once,
  then, once every address has been tried, backs off (0.1 s doubling to
  2 s, with jitter). All of it within the call's ``total_timeout``.
* A call that is not idempotent (a replay or re-run: the API takes no key
  for them) is retried only when the request certainly did not arrive: the
  connection was refused, or the node answered 429/503 (a refused request
  changes nothing). Triggers are idempotent through their
  ``Idempotency-Key``, events through their ``dedupe_key``.
"""
from __future__ import annotations

import email.utils
import http.client
import json
import random
import socket
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from ._version import __version__
from .config import split_addr
from .errors import (BatonError, RedirectRefused, TLSError, Unavailable, error_from_answer)

MAX_REDIRECTS = 3
RETRY_STATUSES = (429, 503)


@dataclass
class Response:
    status: int
    headers: Dict[str, str]
    body: bytes
    address: str  # HOST:PORT that answered (after redirects)

    def json(self) -> Any:
        if not self.body:
            return None
        return json.loads(self.body.decode("utf-8"))


class _NotSent(Exception):
    """The request never reached a node (connect or handshake failed)."""


class _MaybeSent(Exception):
    """The connection failed after the request was (perhaps) sent."""


def make_ssl_context(ca_file: Optional[str]) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca_file)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _join_host(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass
class Transport:
    addresses: List[str]
    token: Optional[str] = field(repr=False)  # never in a repr, a traceback's locals or a log line
    ssl_context: ssl.SSLContext
    timeout: float = 10.0
    total_timeout: float = 30.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    # Whether ssl_context trusts the cluster's own CA (a ca_file) rather than
    # the system's roots: only then is the token sent after a redirect to an
    # address that is not one of `addresses` (any publicly trusted
    # certificate would verify against the system's roots).
    ca_pinned: bool = False
    _preferred: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # --- one exchange -----------------------------------------------------
    def _exchange(self, host: str, port: int, method: str, target: str, body: Optional[bytes],
                  headers: Dict[str, str], timeout: float) -> Response:
        conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=self.ssl_context)
        try:
            try:
                conn.connect()
            except ssl.SSLCertVerificationError as e:
                raise TLSError("tls", f"{_join_host(host, port)}: certificate verify failed: "
                                      f"{e.verify_message or e.reason}") from None
            except (ssl.SSLEOFError, ssl.SSLZeroReturnError, ConnectionError, socket.timeout) as e:
                raise _NotSent(f"cannot reach {_join_host(host, port)}: {e}") from None
            except ssl.SSLError as e:
                hint = ""
                if "WRONG_VERSION_NUMBER" in str(e) or "wrong version number" in str(e):
                    hint = " (the node may serve plaintext; this client speaks HTTPS only)"
                raise TLSError("tls", f"{_join_host(host, port)}: {e.reason or e}{hint}") from None
            except OSError as e:
                raise _NotSent(f"cannot reach {_join_host(host, port)}: {e.strerror or e}") from None
            try:
                conn.request(method, target, body=body, headers=headers)
                r = conn.getresponse()
                data = r.read()
            except (OSError, http.client.HTTPException) as e:
                raise _MaybeSent(f"{_join_host(host, port)}: {type(e).__name__}: {e}") from None
            return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, data, _join_host(host, port))
        finally:
            conn.close()

    def _once(self, addr: str, method: str, target: str, body: Optional[bytes], headers: Dict[str, str],
              timeout: float) -> Response:
        """One request to addr, following a follower's redirects."""
        host, port = split_addr(addr)
        for hop in range(MAX_REDIRECTS + 1):
            r = self._exchange(host, port, method, target, body, headers, timeout)
            if r.status not in (307, 308):
                return r
            location = r.headers.get("location", "")
            if hop == MAX_REDIRECTS:
                raise Unavailable("redirect_loop", f"too many redirects (last to {location})", r.status)
            base = f"https://{_join_host(host, port)}{target}"
            u = urllib.parse.urlsplit(urllib.parse.urljoin(base, location))
            if u.scheme != "https" or not u.hostname:
                raise RedirectRefused("redirect_refused",
                                      f"not following the redirect to '{location}': only https:// addresses are "
                                      f"followed", r.status)
            if u.username or u.password:
                raise RedirectRefused("redirect_refused", f"not following the redirect to '{location}'", r.status)
            host, port = u.hostname, u.port or 443
            if "Authorization" in headers and not self.ca_pinned and not self._configured(host, port):
                raise RedirectRefused("redirect_refused",
                                      f"not sending the token to '{location}': it is not one of the configured "
                                      f"addresses and no ca_file pins the cluster's CA (add it to the addresses, "
                                      f"or set ca_file)", r.status)
            target = urllib.parse.urlunsplit(("", "", u.path or "/", u.query, ""))
        raise AssertionError("unreachable")

    def _configured(self, host: str, port: int) -> bool:
        for a in self.addresses:
            h, p = split_addr(a)
            if p == port and h.strip("[]").lower() == host.strip("[]").lower():
                return True
        return False

    # --- a call, with retries -----------------------------------------------
    def request(self, method: str, target: str, body: Any = None, headers: Optional[Dict[str, str]] = None,
                idempotent: bool = True, total_timeout: Optional[float] = None) -> Response:
        """The answer of the first node that answers (2xx-4xx other than
        429, or a 503 that outlasted the retries: the caller raises it)."""
        h = {"User-Agent": f"baton-python/{__version__}", "Accept": "application/json"}
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode("utf-8")
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        budget = self.total_timeout if total_timeout is None else total_timeout
        deadline = self.clock() + budget
        with self._lock:
            start = self._preferred
        n = len(self.addresses)
        tried_in_round = 0
        backoff = 0.1
        i = start
        last: Optional[BatonError] = None
        while True:
            addr = self.addresses[i % n]
            remaining = deadline - self.clock()
            if last is not None and remaining <= 0:
                raise _gave_up(last, budget, self.addresses)
            wait: Optional[float] = None
            move_on = False
            try:
                r = self._once(addr, method, target, data, h, max(0.05, min(self.timeout, remaining)))
            except _NotSent as e:
                last = Unavailable("unreachable", str(e))
                move_on = True
            except _MaybeSent as e:
                last = Unavailable("unreachable", f"no answer from {e}")
                if not idempotent:
                    raise Unavailable("unreachable", f"no answer from {e}; not retried: the request may have "
                                                     f"been applied and this call has no idempotency key") from None
                move_on = True
            else:
                if r.status not in RETRY_STATUSES:
                    with self._lock:
                        self._preferred = i % n
                    return r
                retry_after = parse_retry_after(r.headers.get("retry-after"))
                last = _error(r, retry_after)
                wait = retry_after
                # A 503 without Retry-After (no leader, database away): another
                # node may do better; a 429 is about us, not the node.
                move_on = r.status == 503 and retry_after is None
            if move_on:
                i += 1
                tried_in_round += 1
                if tried_in_round < n and wait is None:
                    continue  # the next address at once
                tried_in_round = 0
            if wait is None:
                wait = backoff * (0.5 + random.random() / 2)
                backoff = min(2.0, backoff * 2)
            if self.clock() + wait > deadline:
                assert last is not None
                raise _gave_up(last, budget, self.addresses)
            self.sleep(wait)


def _gave_up(last: BatonError, budget: float, addresses: List[str]) -> BatonError:
    if last.status != 0:
        return last  # the node's own answer (a 429 or 503) says it best
    return type(last)(last.code, f"{last.message} (gave up after {budget:g} s; tried {', '.join(addresses)})")


def _error(r: Response, retry_after: Optional[float] = None) -> BatonError:
    try:
        body = r.json()
    except ValueError:
        body = None
    return error_from_answer(r.status, body, r.body.decode("utf-8", "replace")[:500], retry_after)


def raise_for(r: Response) -> None:
    if r.status >= 300:
        raise _error(r, parse_retry_after(r.headers.get("retry-after")))
