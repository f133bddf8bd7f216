-- Vanguard schema, version 14: how many times a test's lease was given back.
--
-- A release (ReleaseTest, a worker shutting down) requeues a test without using up one of
-- its max_attempts, so without a count a test its workers keep giving back would run
-- forever. TestRepository::Release counts releases here and fails the test at the release
-- over TestRepository::kMaxLeaseReleases. Tests queued before this migration start at 0:
-- their earlier releases are not known.
ALTER TABLE tests ADD COLUMN IF NOT EXISTS releases integer NOT NULL DEFAULT 0;
