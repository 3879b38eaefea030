-- The shared request log (lightmind.requestlog): a fingerprint of each request, so a
-- request_id reused for a different request is refused, and the column names it expects.
ALTER TABLE request_log ADD COLUMN fingerprint text NOT NULL DEFAULT '';
ALTER TABLE request_log RENAME COLUMN created_at TO create_time;
CREATE INDEX request_log_by_id ON request_log (tenant, request_id);
CREATE INDEX request_log_age ON request_log (create_time);
