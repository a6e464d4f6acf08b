-- API tokens can expire (docs/security.md, "Safe defaults"): a token made
-- with a time to live is refused by every node once `expires_at` has
-- passed, as a revoked one is. NULL: it does not expire (every token made
-- before this migration, and one made without a TTL). An expired token
-- keeps its name until it is revoked (the name is unique among tokens not
-- revoked), so that `ctl token list` still shows who had access until when.
ALTER TABLE api_tokens ADD COLUMN expires_at TIMESTAMPTZ;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_expiry_after_creation
  CHECK (expires_at IS NULL OR expires_at > created_at);
