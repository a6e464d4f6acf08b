"""Exceptions: every one is a BatonError carrying the API's error code,
its message and the HTTP status (0 when no answer came).

The API answers errors as JSON ``{"code", "message"}`` (docs/operations.md,
"HTTP API"); the code is kept as it is, and the class is chosen from the
status and the code.
"""
from __future__ import annotations

from typing import Any, Optional


class BatonError(Exception):
    """An error of the Baton admin API or of reaching it.

    ``code``: the API's error code (``unknown_job``, ``not_found``,
    ``unauthenticated``, ...) or one of this client's own (``unreachable``,
    ``tls``, ``redirect_refused``, ``config``, ``timeout``);
    ``message``: what the API (or the client) said; ``status``: the HTTP
    status, 0 when no answer came; ``body``: the decoded JSON answer, if any;
    ``retry_after``: seconds from a ``Retry-After`` header, if any.
    """

    def __init__(self, code: str, message: str, status: int = 0, body: Any = None,
                 retry_after: Optional[float] = None) -> None:
        super().__init__(f"{code}: {message}" + (f" (HTTP {status})" if status else ""))
        self.code = code
        self.message = message
        self.status = status
        self.body = body
        self.retry_after = retry_after


class ConfigError(BatonError):
    """The client's configuration is unusable (a token file that cannot be
    read, a config file with an unknown key, plaintext asked for)."""

    def __init__(self, message: str) -> None:
        super().__init__("config", message)


class TLSError(BatonError):
    """A node's certificate did not verify against the configured CA and the
    address dialed (or the TLS handshake failed). Never retried: nothing,
    not even the token, was sent to that endpoint."""


class RedirectRefused(BatonError):
    """A 307/308 named an endpoint this client does not follow (not
    ``https://``). Nothing was sent there."""


class BadRequest(BatonError):
    """400 (``bad_request``, ``bad_json``) or 413: the request was refused
    as malformed; nothing changed."""


class InvalidParameters(BadRequest):
    """400 ``invalid_parameters``: the job's parameter declarations refuse
    the trigger's parameters (the message names the parameter and rule)."""


class InvalidJob(BadRequest):
    """400 ``invalid_job``: a job definition that does not validate."""


class Unauthorized(BatonError):
    """401 ``unauthenticated``: no token, or an unknown, expired or revoked one."""


class Forbidden(BatonError):
    """403 ``forbidden``: the token's role is too low for the call."""


class NotFound(BatonError):
    """404: ``not_found``, ``unknown_job`` (a trigger of a job that does not
    exist), ``no_archive``."""


class Conflict(BatonError):
    """409 ``conflict``; ``current`` holds the current definition when the
    API sends it (a stale ``version``)."""

    @property
    def current(self) -> Any:
        return self.body.get("current") if isinstance(self.body, dict) else None


class RateLimited(BatonError):
    """429 (``rate_limited``, ``auth_throttled``) that outlasted the retries."""


class Unavailable(BatonError):
    """No node answered usefully within the call's time: 503
    (``db_unavailable``, ``unavailable``, ``overloaded``), a connection that
    failed or timed out on every configured address. Retry later."""


class NotLeader(Unavailable):
    """A leader-only call found no leader (``no_leader``, ``not_leader``)
    within the call's time, e.g. during an election."""


class WaitTimeout(BatonError, TimeoutError):
    """``Client.wait`` gave up before the run finished; ``run`` is the run as
    last seen."""

    def __init__(self, message: str, run: Any = None) -> None:
        super().__init__("timeout", message)
        self.run = run


def error_from_answer(status: int, body: Any, text: str, retry_after: Optional[float] = None) -> BatonError:
    """The exception for an error answer of the API."""
    code, message = f"http_{status}", text.strip() or f"HTTP {status}"
    if isinstance(body, dict):
        if isinstance(body.get("code"), str):
            code = body["code"]
        if isinstance(body.get("message"), str):
            message = body["message"]
    cls: type = BatonError
    if status in (400, 413):
        cls = {"invalid_parameters": InvalidParameters, "invalid_job": InvalidJob}.get(code, BadRequest)
    elif status == 401:
        cls = Unauthorized
    elif status == 403:
        cls = Forbidden
    elif status == 404:
        cls = NotFound
    elif status == 409:
        cls = Conflict
    elif status == 429:
        cls = RateLimited
    elif status in (307, 308) or code in ("not_leader", "no_leader"):
        cls = NotLeader
    elif status in (502, 503, 504):
        cls = Unavailable
    return cls(code, message, status, body, retry_after)
