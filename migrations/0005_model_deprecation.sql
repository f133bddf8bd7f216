-- Vanguard schema, version 5: when a model version was deprecated (models.deprecated is
-- from 0001). A deprecated version stays readable and testable by explicit version, but a
-- test that names no version resolves to the newest version that is not deprecated.
ALTER TABLE models ADD COLUMN IF NOT EXISTS deprecated_at timestamptz;
CREATE INDEX IF NOT EXISTS models_name_idx ON models (name, created_at DESC);
