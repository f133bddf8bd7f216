-- Vanguard schema, version 2: bearer tokens for the gRPC API.
-- Only the SHA-256 of a token's secret is stored; the secret is shown once, at creation.
-- A revoked token keeps its row (audit) and frees its name for a new token.
CREATE TABLE IF NOT EXISTS api_tokens (
  id             bigserial PRIMARY KEY,
  name           text NOT NULL CHECK (name <> ''),
  role           text NOT NULL CHECK (role IN ('reader', 'submitter', 'worker', 'admin')),
  secret_sha256  bytea NOT NULL UNIQUE,
  created_at     timestamptz NOT NULL DEFAULT now(),
  revoked_at     timestamptz
);
CREATE UNIQUE INDEX IF NOT EXISTS api_tokens_active_name_idx
  ON api_tokens (name) WHERE revoked_at IS NULL;
