"""A Python client of Baton's admin API (docs/clients.md).

    from baton_client import Client
    client = Client()                       # BATON_ADDR, BATON_TOKEN_FILE, BATON_CA_FILE, like baton ctl
    run = client.wait(client.trigger("greet", {"name": "ops"}).run_id)
    print(run.state, run.output())

Standard library only. HTTPS with the node's certificate verified, a
follower's redirect to the leader followed only to verified https://
endpoints, retries on 429/503 and failover across addresses, idempotency
keys on every trigger.
"""
from ._version import __version__
from .client import Client, new_key
from .errors import (BadRequest, BatonError, ConfigError, Conflict, Forbidden, InvalidJob, InvalidParameters,
                     NotFound, NotLeader, RateLimited, RedirectRefused, TLSError, Unauthorized, Unavailable,
                     WaitTimeout)
from .models import (TERMINAL_STATES, Attempt, CancelRequested, DeadLetter, Event, Job, JobApplied, JobPaused,
                     LogChunk, Replayed, Run, Triggered)

__all__ = [
    "__version__", "Client", "new_key",
    "BatonError", "ConfigError", "TLSError", "RedirectRefused", "BadRequest", "InvalidParameters", "InvalidJob",
    "Unauthorized", "Forbidden", "NotFound", "Conflict", "RateLimited", "Unavailable", "NotLeader", "WaitTimeout",
    "TERMINAL_STATES", "Attempt", "CancelRequested", "DeadLetter", "Event", "Job", "JobApplied", "JobPaused",
    "LogChunk", "Replayed", "Run", "Triggered",
]
