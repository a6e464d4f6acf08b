"""The client of Baton's admin API (``/api/v1`` on every node)."""
from __future__ import annotations

import datetime as _dt
import time
import urllib.parse
import uuid
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Union)

from . import config as _config
from .errors import BatonError, RateLimited, Unavailable, WaitTimeout
from .models import (CancelRequested, DeadLetter, Event, Job, JobApplied, JobPaused, LogChunk, Replayed, Run,
                     Triggered)
from .transport import Transport, make_ssl_context, raise_for

RunAt = Union[str, _dt.datetime, int, float]


def _seg(value: Any) -> str:
    """One path segment, percent-encoded (a name cannot reach another route)."""
    return urllib.parse.quote(str(value), safe="")


#: Runs one batch trigger takes (POST /api/v1/triggers).
TRIGGER_BATCH_MAX = 500

Duration = Union[int, float, _dt.timedelta]


def _trigger_body(parameters: Optional[Mapping[str, Any]], run_at: Optional[RunAt], priority: Optional[int],
                  timeout: Optional[Duration]) -> Dict[str, Any]:
    """A trigger's body (the single trigger's, and each run of a batch)."""
    body: Dict[str, Any] = {}
    if parameters is not None:
        body["parameters"] = dict(parameters)
    if run_at is not None:
        body["run_at"] = _iso_utc(run_at)
    if priority is not None:
        body["priority"] = int(priority)
    if timeout is not None:
        seconds = timeout.total_seconds() if isinstance(timeout, _dt.timedelta) else float(timeout)
        body["timeout_ms"] = max(1, int(round(seconds * 1000)))
    return body


def _iso_utc(at: RunAt) -> str:
    if isinstance(at, str):
        return at
    if isinstance(at, (int, float)):
        at = _dt.datetime.fromtimestamp(at, _dt.timezone.utc)
    if at.tzinfo is None:
        at = at.replace(tzinfo=_dt.timezone.utc)
    return at.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_key() -> str:
    """A fresh idempotency key (a uuid4)."""
    return str(uuid.uuid4())


class Client:
    """A client of one Baton cluster.

    Configured like ``baton ctl`` (docs/ctl.md, "Connecting"); an argument
    given here beats the environment (``BATON_ADDR``, ``BATON_TOKEN``,
    ``BATON_TOKEN_FILE``, ``BATON_CA_FILE``, ``BATON_CONFIG``), which beats
    the config file (``~/.config/baton/ctl.yaml``)::

        client = Client()                                  # all from the environment / file
        client = Client(["10.0.0.5:7001", "10.0.0.6:7001"],
                        token_file="/etc/baton/app.token", ca_file="/etc/baton/tls/ca.crt")

    ``addresses``: one ``HOST:PORT``, a comma-separated string or a list;
    when one does not answer the next is tried. ``token`` or
    ``token_file``: the API token (role ``operate`` to trigger). ``ca_file``:
    the CA of the nodes' certificates (default: the system's roots).
    ``config``: a ctl config file. ``timeout``: seconds for one request;
    ``total_timeout``: seconds for a call with every retry, redirect and
    failover in it. ``env``: the environment to read instead of
    ``os.environ`` (``{}``: none, and no config file unless named).

    Every call that creates a run is safe to retry: ``trigger`` sends an
    ``Idempotency-Key`` (a uuid4 per call unless you give one) that its
    retries reuse, ``emit_event`` a ``dedupe_key``. ``rerun`` and ``replay``
    have no key in the API, so they are retried only when the request
    certainly did not arrive.
    """

    def __init__(self, addresses: Union[str, Sequence[str], None] = None, *, token: Optional[str] = None,
                 token_file: Optional[str] = None, ca_file: Optional[str] = None, config: Optional[str] = None,
                 timeout: float = 10.0, total_timeout: float = 30.0,
                 env: Optional[Mapping[str, str]] = None) -> None:
        self.settings = _config.resolve(addresses, token, token_file, ca_file, config, env)
        self.transport = Transport(list(self.settings.addresses), self.settings.token,
                                   make_ssl_context(self.settings.ca_file), timeout=timeout,
                                   total_timeout=total_timeout, ca_pinned=self.settings.ca_file is not None)
        self._sleep: Callable[[float], None] = time.sleep
        self._clock: Callable[[], float] = time.monotonic

    @property
    def addresses(self) -> List[str]:
        return list(self.transport.addresses)

    # --- plumbing -----------------------------------------------------------
    def _call(self, method: str, target: str, body: Any = None, headers: Optional[Dict[str, str]] = None,
              idempotent: bool = True, total_timeout: Optional[float] = None) -> Any:
        r = self.transport.request(method, target, body, headers, idempotent=idempotent,
                                   total_timeout=total_timeout)
        raise_for(r)
        try:
            return r.json()
        except ValueError:
            raise BatonError("bad_answer", f"{r.address} answered {method} {target} with something that is not "
                                           f"JSON", r.status) from None

    def _list(self, path: str, params: Dict[str, Any], limit: Optional[int]) -> List[Dict[str, Any]]:
        """Every item of a paginated list, up to limit (None: all pages)."""
        items: List[Dict[str, Any]] = []
        cursor: Optional[str] = None
        while True:
            q = {k: str(v) for k, v in params.items() if v is not None}
            q["limit"] = str(500 if limit is None else max(1, min(500, limit - len(items))))
            if cursor is not None:
                q["cursor"] = cursor
            page = self._call("GET", f"{path}?{urllib.parse.urlencode(q)}")
            items.extend(page.get("items") or [])
            nxt = page.get("next_cursor")
            if nxt is None or (limit is not None and len(items) >= limit):
                return items if limit is None else items[:limit]
            cursor = str(nxt)

    # --- cluster ----------------------------------------------------------------
    def status(self) -> Dict[str, Any]:
        """``GET /status`` of the first node that answers: its role, the
        leader, the epoch, runs by state."""
        return self._call("GET", "/status")

    # --- triggering -------------------------------------------------------------
    def trigger(self, job: str, parameters: Optional[Mapping[str, Any]] = None,
                idempotency_key: Optional[str] = None, run_at: Optional[RunAt] = None, *,
                priority: Optional[int] = None, timeout: Optional[Duration] = None) -> Triggered:
        """A run of ``job`` now (or, with ``run_at``, a one-off that does not
        start before then: an ISO 8601 string, a datetime (naive means UTC)
        or unix seconds).

        ``idempotency_key``: names this submission; without one a uuid4 is
        made for this call. Every retry of the call (a failover, a lost
        answer) sends the same key, so the job runs once: a key that already
        names a run (unfinished, or finished within 24 hours) gives that run
        back with ``created`` False. Pass your own key (an order id, say) to
        make a trigger idempotent across processes and restarts too.

        ``priority``: the run's own, from -1000 up to the job's priority.
        ``timeout``: the run's own (seconds, or a timedelta), at most the
        job's timeout.

        Raises NotFound (code ``unknown_job``) for a job that does not
        exist, InvalidParameters when the job's declarations refuse the
        parameters or the priority or timeout is beyond what the job allows.
        """
        key = idempotency_key or new_key()
        body = _trigger_body(parameters, run_at, priority, timeout)
        answer = self._call("POST", f"/api/v1/jobs/{_seg(job)}/trigger", body or None,
                            headers={"Idempotency-Key": key}, idempotent=True)
        return Triggered.from_json(answer, key)

    def trigger_many(self, job: str, parameter_sets: Iterable[Optional[Mapping[str, Any]]], *,
                     idempotency_keys: Optional[Sequence[str]] = None, run_at: Optional[RunAt] = None,
                     priority: Optional[int] = None, timeout: Optional[Duration] = None) -> List[Triggered]:
        """One run of ``job`` per item of ``parameter_sets`` (a mapping of
        parameters, or None for the job's defaults), in order, through the
        batch route (``POST /api/v1/triggers``): up to 500 runs per call, all
        written in one statement, all or none. Each run has its own
        idempotency key, ``idempotency_keys[i]`` if given, else a fresh
        uuid4, and a retried call sends the same keys, so a lost answer never
        makes a run twice (a key that names a run gives it back, ``created``
        False).

        More than 500 items are sent as several calls, in order. If one
        fails, the exception raised carries ``completed`` (the runs of the
        calls before it) and ``keys`` (every key this call meant to use):
        calling again with the same ``idempotency_keys`` gives those runs
        back instead of new ones.
        """
        sets = list(parameter_sets)
        keys = list(idempotency_keys) if idempotency_keys is not None else [new_key() for _ in sets]
        if len(keys) != len(sets):
            raise ValueError(f"{len(sets)} parameter sets but {len(keys)} idempotency keys")
        out: List[Triggered] = []
        for at in range(0, len(sets), TRIGGER_BATCH_MAX):
            runs = []
            for params, key in zip(sets[at:at + TRIGGER_BATCH_MAX], keys[at:at + TRIGGER_BATCH_MAX]):
                item = _trigger_body(params, run_at, priority, timeout)
                item.update({"job": job, "idempotency_key": key})
                runs.append(item)
            try:
                answer = self._call("POST", "/api/v1/triggers", {"runs": runs}, idempotent=True)
            except BatonError as e:
                e.completed = list(out)  # type: ignore[attr-defined]
                e.keys = list(keys)  # type: ignore[attr-defined]
                raise
            out.extend(Triggered.from_json(r) for r in answer["runs"])
        return out

    def rerun(self, run_id: int) -> Triggered:
        """A new run of the same job and payload as a finished run. The API
        takes no idempotency key here: not retried once it may have arrived."""
        answer = self._call("POST", f"/api/v1/runs/{_seg(run_id)}/rerun", idempotent=False)
        return Triggered.from_json(answer)

    def cancel(self, run_id: int) -> CancelRequested:
        """Cancel a run (a running one through its worker); the run ends
        CANCELED. Conflict if it has already finished."""
        return CancelRequested.from_json(self._call("POST", f"/api/v1/runs/{_seg(run_id)}/cancel"))

    # --- runs -------------------------------------------------------------------
    def get_run(self, run_id: int, *, total_timeout: Optional[float] = None) -> Run:
        """One run with its attempts, transitions, log chunks and dead letter."""
        return Run.from_json(self._call("GET", f"/api/v1/runs/{_seg(run_id)}", total_timeout=total_timeout))

    def list_runs(self, *, job: Optional[str] = None, state: Optional[str] = None, worker: Optional[str] = None,
                  idempotency_key: Optional[str] = None, created_after: Optional[int] = None,
                  created_before: Optional[int] = None, limit: Optional[int] = 50) -> List[Run]:
        """Runs newest first (summaries: no logs or attempts), filtered like
        ``baton ctl runs list`` (``created_*`` in unix seconds); ``limit``
        None follows every page."""
        items = self._list("/api/v1/runs", {"job": job, "state": state, "worker": worker,
                                            "idempotency_key": idempotency_key, "created_after": created_after,
                                            "created_before": created_before}, limit)
        return [Run.from_json(i) for i in items]

    def wait(self, run_id: int, timeout: Optional[float] = 600.0, *, interval: float = 0.2,
             max_interval: float = 2.0) -> Run:
        """Polls the run until it has finished and returns it (``state``
        SUCCEEDED, FAILED, TIMED_OUT or CANCELED; its logs included).

        Any node answers the read, so a leader change does not stop it: a
        node that does not answer is replaced by the next address, and an
        outage (no node, no database) is waited out until ``timeout``
        (seconds; None waits for ever). The poll starts every ``interval``
        seconds and slows to ``max_interval``. Raises WaitTimeout (with the
        run as last seen) if the run is still unfinished at the timeout.
        """
        deadline = None if timeout is None else self._clock() + timeout
        delay = interval
        last: Optional[Run] = None
        outage: Optional[BatonError] = None
        while True:
            remaining = None if deadline is None else deadline - self._clock()
            budget = self.transport.total_timeout if remaining is None else max(0.1, min(
                self.transport.total_timeout, remaining))
            try:
                run = self.get_run(run_id, total_timeout=budget)
                outage = None
            except (Unavailable, RateLimited) as e:
                outage = e
            else:
                if run.finished:
                    return run
                last = run
            if deadline is not None and self._clock() + delay > deadline:
                said = f"still {last.state}" if last else "not seen"
                why = f" (the last try: {outage})" if outage else ""
                raise WaitTimeout(f"run {run_id} is {said} after {timeout:g} s{why}", last)
            self._sleep(delay)
            delay = min(max_interval, delay * 1.5)

    def logs(self, run_id: int, follow: bool = False, *, interval: float = 1.0,
             timeout: Optional[float] = None) -> Iterator[LogChunk]:
        """The run's output as the database keeps it (the first
        ``runtime.output_db_bytes`` of each stream), chunk by chunk, in the
        order written (stdout and stderr interleaved: see ``chunk.stream``).

        With ``follow``, keeps reading every ``interval`` seconds and yields
        new chunks as the run writes them, until it finishes (like
        ``baton ctl logs -f``); a leader change is waited out as in
        ``wait``. ``timeout`` bounds following (WaitTimeout)."""
        deadline = None if timeout is None else self._clock() + timeout
        shown = 0
        while True:
            try:
                run = self.get_run(run_id)
            except (Unavailable, RateLimited):
                if not follow or (deadline is not None and self._clock() >= deadline):
                    raise
                self._sleep(interval)
                continue
            for chunk in run.logs[shown:]:
                yield chunk
            shown = max(shown, len(run.logs))
            if not follow or run.finished:
                return
            if deadline is not None and self._clock() + interval > deadline:
                raise WaitTimeout(f"run {run_id} is still {run.state} after {timeout:g} s", run)
            self._sleep(interval)

    # --- events -----------------------------------------------------------------
    def emit_event(self, kind: str, payload: Optional[Mapping[str, Any]] = None,
                   dedupe_key: Optional[str] = None) -> Event:
        """Record an event: each job subscribed to ``kind`` (``on_events``)
        gets one run of it. ``dedupe_key`` records the event once however
        often it is sent; without one a uuid4 is made for this call, so
        this call's retries record it once. ``created`` is False when the
        key was already used (nothing recorded)."""
        key = dedupe_key or new_key()
        body: Dict[str, Any] = {"kind": kind, "dedupe_key": key}
        if payload is not None:
            body["payload"] = dict(payload)
        answer = self._call("POST", "/api/v1/events", body, idempotent=True)
        return Event.from_json(answer, kind=kind, payload=body.get("payload"), dedupe_key=key)

    def list_events(self, *, kind: Optional[str] = None, limit: Optional[int] = 50) -> List[Event]:
        """Events newest first, with the runs made from each."""
        return [Event.from_json(i) for i in self._list("/api/v1/events", {"kind": kind}, limit)]

    # --- jobs ---------------------------------------------------------------------
    def list_jobs(self, *, limit: Optional[int] = None) -> List[Job]:
        """Job definitions by name (every page unless ``limit``)."""
        return [Job.from_json(i) for i in self._list("/api/v1/jobs", {}, limit)]

    def get_job(self, name: str) -> Job:
        return Job.from_json(self._call("GET", f"/api/v1/jobs/{_seg(name)}"))

    def pause_job(self, name: str) -> JobPaused:
        """Its schedule creates no runs until resumed (triggers still do)."""
        return JobPaused.from_json(self._call("POST", f"/api/v1/jobs/{_seg(name)}/pause"))

    def resume_job(self, name: str) -> JobPaused:
        return JobPaused.from_json(self._call("POST", f"/api/v1/jobs/{_seg(name)}/resume"))

    def put_job(self, definition: Mapping[str, Any], *, version: Optional[int] = None,
                dry_run: bool = False) -> JobApplied:
        """Create or replace a job from a definition with the keys of a job
        file entry (admin role); ``version``: only if still at it."""
        if not isinstance(definition.get("name"), str):
            raise ValueError("a job definition needs a 'name'")
        q = {k: v for k, v in (("version", version), ("dry_run", "true" if dry_run else None)) if v is not None}
        target = f"/api/v1/jobs/{_seg(definition['name'])}" + (f"?{urllib.parse.urlencode(q)}" if q else "")
        return JobApplied.from_json(self._call("PUT", target, dict(definition)))

    def delete_job(self, name: str, *, version: Optional[int] = None) -> Dict[str, Any]:
        """Soft delete: no more runs; its runs and history stay (admin role)."""
        q = f"?version={int(version)}" if version is not None else ""
        return self._call("DELETE", f"/api/v1/jobs/{_seg(name)}{q}")

    # --- dead letters ---------------------------------------------------------
    def list_dead_letters(self, *, status: Optional[str] = None, limit: Optional[int] = 50) -> List[DeadLetter]:
        """Dead letters newest first; ``status`` pending, acknowledged,
        replayed or closed."""
        return [DeadLetter.from_json(i) for i in self._list("/api/v1/dead-letters", {"status": status}, limit)]

    def get_dead_letter(self, dead_letter_id: int) -> DeadLetter:
        return DeadLetter.from_json(self._call("GET", f"/api/v1/dead-letters/{_seg(dead_letter_id)}"))

    def triage(self, dead_letter_id: int, status: str, notes: Optional[str] = None) -> DeadLetter:
        """Record what was found: ``status`` and, optionally, ``notes``."""
        body: Dict[str, Any] = {"status": status}
        if notes is not None:
            body["notes"] = notes
        answer = self._call("POST", f"/api/v1/dead-letters/{_seg(dead_letter_id)}/triage", body)
        return DeadLetter.from_json(dict(answer, id=dead_letter_id))

    def replay(self, dead_letter_id: int) -> Replayed:
        """A new run of the letter's job and payload; the letter becomes
        ``replayed``. The API takes no idempotency key here: not retried
        once the request may have arrived."""
        answer = self._call("POST", f"/api/v1/dead-letters/{_seg(dead_letter_id)}/replay", idempotent=False)
        return Replayed.from_json(answer)

    def replay_many(self, dead_letter_ids: Iterable[int]) -> List[Replayed]:
        """Replay up to 500 letters in one request; one result each (a
        letter that could not be replayed has ``error`` and ``message``).
        NotFound if none could be."""
        ids = [int(i) for i in dead_letter_ids]
        answer = self._call("POST", "/api/v1/dead-letters/replay", {"ids": ids}, idempotent=False)
        return [Replayed.from_json(r) for r in answer.get("results") or []]


