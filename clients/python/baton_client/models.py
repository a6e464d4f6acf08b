"""Typed results, built from the JSON the API answers (docs/operations.md,
"HTTP API"). Each keeps the whole answer in ``raw``, so a field this client
does not name yet is still there. Times are the API's ISO 8601 strings.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

TERMINAL_STATES = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELED"})


def _build(cls, data: Dict[str, Any], **overrides: Any):
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs = {k: v for k, v in data.items() if k in names and k != "raw"}
    kwargs.update(overrides)
    kwargs["raw"] = data
    return cls(**kwargs)


@dataclass
class LogChunk:
    """A piece of a run's output as the database keeps it."""
    text: str
    stream: str = "stdout"
    attempt: int = 1
    at: Optional[str] = None
    start_offset: Optional[int] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "LogChunk":
        return _build(cls, d, text=d.get("chunk", ""))


@dataclass
class Attempt:
    attempt: int
    worker_id: Optional[str] = None
    leader_epoch: Optional[int] = None
    outcome: Optional[str] = None
    exit_code: Optional[int] = None
    duration_ms: Optional[int] = None
    started_at: Optional[str] = None
    finished_at: Optional[str] = None
    task_results: Any = None
    #: Why it ended ("failed", "timeout", "attempt_lost", ...).
    error_code: Optional[str] = None
    #: What its worker reported after the leader had given up on it
    #: ({"outcome", "exit_code", "reported_at"}), or None.
    late_report: Optional[Dict[str, Any]] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Attempt":
        return _build(cls, d)


@dataclass
class Run:
    """A run: ``GET /api/v1/runs/{id}`` (everything) or an item of
    ``GET /api/v1/runs`` (the summary: no attempts, logs or payload)."""
    id: int
    job: Optional[str] = None
    state: str = ""
    attempt: Optional[int] = None
    max_attempts: Optional[int] = None
    leader_epoch: Optional[int] = None
    worker_id: Optional[str] = None
    idempotency_key: Optional[str] = None
    trigger_kind: Optional[str] = None
    payload: Any = None
    scheduled_for: Optional[str] = None
    created_at: Optional[str] = None
    started_at: Optional[str] = None
    finished_at: Optional[str] = None
    result: Any = None
    error_code: Optional[str] = None
    error_msg: Optional[str] = None
    continuation_state: Optional[str] = None
    rerun_of: Optional[int] = None
    attempts: List[Attempt] = field(default_factory=list)
    logs: List[LogChunk] = field(default_factory=list)
    transitions: List[Dict[str, Any]] = field(default_factory=list)
    dead_letter: Optional[Dict[str, Any]] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Run":
        return _build(cls, d,
                      worker_id=d.get("worker_id", d.get("assigned_worker_id")),
                      attempts=[Attempt.from_json(a) for a in d.get("attempts") or []],
                      logs=[LogChunk.from_json(c) for c in d.get("logs") or []],
                      transitions=list(d.get("transitions") or []))

    @property
    def finished(self) -> bool:
        """SUCCEEDED, FAILED, TIMED_OUT or CANCELED: it will not change again."""
        return self.state in TERMINAL_STATES

    @property
    def succeeded(self) -> bool:
        return self.state == "SUCCEEDED"

    def output(self, stream: str = "stdout", attempt: Optional[int] = None) -> str:
        """The text of one stream of one attempt (default: the last attempt
        that wrote output), from the log chunks of ``get_run``/``wait``."""
        chunks = [c for c in self.logs if c.stream == stream]
        if attempt is None and chunks:
            attempt = max(c.attempt for c in chunks)
        return "".join(c.text for c in chunks if c.attempt == attempt)


@dataclass
class Triggered:
    """The answer to a trigger: ``created`` False when the idempotency key
    already named a run, which ``run_id`` then is."""
    run_id: int
    job: Optional[str] = None
    created: bool = True
    idempotency_key: Optional[str] = None
    run_at: Optional[str] = None
    message: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any], idempotency_key: Optional[str] = None) -> "Triggered":
        return _build(cls, d, idempotency_key=d.get("idempotency_key", idempotency_key),
                      created=bool(d.get("created", True)))


@dataclass
class Job:
    """A job definition (``GET /api/v1/jobs``): every key of a job file is in
    ``raw``; the common ones are fields."""
    name: str
    schedule: Optional[str] = None
    time_zone: Optional[str] = None
    paused: bool = False
    live: bool = True
    version: Optional[int] = None
    tasks: List[Any] = field(default_factory=list)
    max_attempts: Optional[int] = None
    timeout_ms: Optional[int] = None
    priority: Optional[int] = None
    parameters: Dict[str, Any] = field(default_factory=dict)
    on_events: List[str] = field(default_factory=list)
    next_fire_unix: Optional[int] = None
    last_run: Optional[Dict[str, Any]] = None
    created_at: Optional[str] = None
    updated_at: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Job":
        return _build(cls, d, tasks=d.get("tasks") or [], parameters=d.get("parameters") or {},
                      on_events=d.get("on_events") or [])


@dataclass
class JobPaused:
    """The answer to a pause or a resume."""
    job: str
    paused: bool
    version: Optional[int] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "JobPaused":
        return _build(cls, d)


@dataclass
class JobApplied:
    """The answer to ``put_job``: ``action`` create, update or unchanged."""
    job: str
    action: str
    changes: List[str] = field(default_factory=list)
    definition: Optional[Dict[str, Any]] = None
    dry_run: bool = False
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "JobApplied":
        return _build(cls, d, changes=d.get("changes") or [], dry_run=bool(d.get("dry_run", False)))


@dataclass
class CancelRequested:
    run_id: int
    status: str = "cancel requested"
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "CancelRequested":
        return _build(cls, d)


@dataclass
class DeadLetter:
    """A run that used up its attempts."""
    id: int
    run_id: Optional[int] = None
    job: Optional[str] = None
    final_state: Optional[str] = None
    attempts: Optional[int] = None
    error_code: Optional[str] = None
    error_msg: Optional[str] = None
    triage_status: Optional[str] = None
    notes: Optional[str] = None
    replayed_run_ids: List[int] = field(default_factory=list)
    created_at: Optional[str] = None
    updated_at: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "DeadLetter":
        return _build(cls, d, replayed_run_ids=list(d.get("replayed_run_ids") or []))


@dataclass
class Replayed:
    """One dead letter's replay: ``run_id`` the new run, or ``error`` and
    ``message`` (in a batch replay, where one letter may fail alone)."""
    dead_letter_id: int
    run_id: Optional[int] = None
    error: Optional[str] = None
    message: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return self.run_id is not None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Replayed":
        return _build(cls, d)


@dataclass
class Event:
    """An event: from ``emit_event`` (``id``, ``created``, and what was sent)
    or from ``list_events`` (also ``created_at``, ``processed_at`` and the
    ``runs`` made from it)."""
    id: int
    kind: Optional[str] = None
    created: Optional[bool] = None
    payload: Any = None
    dedupe_key: Optional[str] = None
    created_at: Optional[str] = None
    created_by: Optional[str] = None
    processed_at: Optional[str] = None
    runs: List[Dict[str, Any]] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any], **sent: Any) -> "Event":
        merged = dict(sent)
        merged.update({k: v for k, v in d.items() if k != "event_id"})
        event = _build(cls, merged, id=d.get("id", d.get("event_id")), runs=list(d.get("runs") or []))
        event.raw = d
        return event
