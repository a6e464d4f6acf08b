-- Per-worker identity (docs/security.md, "Worker identity"). An operator
-- grants a worker id its labels and capacity and gets a bootstrap token for
-- it: single use, expiring, good for that one worker id. The worker trades
-- it (POST /api/v1/enroll) for a credential of its own, which its hello then
-- carries. Only SHA-256 hashes of either token are stored.

CREATE TABLE worker_enrollments (
  id           BIGSERIAL PRIMARY KEY,
  worker_id    TEXT NOT NULL CHECK (length(worker_id) BETWEEN 1 AND 200),
  labels       JSONB NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(labels) = 'object'),
  capacity     INTEGER NOT NULL CHECK (capacity BETWEEN 0 AND 10000),
  token_sha256 TEXT NOT NULL UNIQUE CHECK (token_sha256 ~ '^[0-9a-f]{64}$'),
  expires_at   TIMESTAMPTZ NOT NULL,
  created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
  created_by   TEXT NOT NULL,
  used_at      TIMESTAMPTZ,
  revoked_at   TIMESTAMPTZ
);

-- The grant travels with the credential: what a hello may claim is what the
-- operator granted when the bootstrap token was made. A worker has at most
-- one live credential: enrolling again revokes the previous one.
CREATE TABLE worker_credentials (
  id            BIGSERIAL PRIMARY KEY,
  worker_id     TEXT NOT NULL CHECK (length(worker_id) BETWEEN 1 AND 200),
  labels        JSONB NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(labels) = 'object'),
  capacity      INTEGER NOT NULL CHECK (capacity BETWEEN 0 AND 10000),
  token_sha256  TEXT NOT NULL UNIQUE CHECK (token_sha256 ~ '^[0-9a-f]{64}$'),
  enrollment_id BIGINT NOT NULL REFERENCES worker_enrollments (id),
  created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
  last_used_at  TIMESTAMPTZ,
  revoked_at    TIMESTAMPTZ
);
CREATE UNIQUE INDEX worker_credentials_live_idx ON worker_credentials (worker_id) WHERE revoked_at IS NULL;
-- Each node closes sessions whose credential was revoked lately.
CREATE INDEX worker_credentials_revoked_idx ON worker_credentials (revoked_at) WHERE revoked_at IS NOT NULL;
