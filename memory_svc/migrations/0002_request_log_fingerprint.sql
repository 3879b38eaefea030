-- The shared request log (lightmind.requestlog) also remembers a fingerprint of each request,
-- so a request_id reused for a different request is refused. Rows from before have none.
ALTER TABLE request_log ADD COLUMN fingerprint text NOT NULL DEFAULT '';
CREATE INDEX request_log_by_id ON request_log (tenant, request_id);
