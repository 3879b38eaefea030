-- Request-id answers move to the table every service shares the layout of
-- (lightmind.requestlog). Answers are short-lived (hours), so the old ones are not carried over.
CREATE TABLE request_log (
    tenant      text        NOT NULL,
    request_id  uuid        NOT NULL,
    method      text        NOT NULL,
    fingerprint text        NOT NULL DEFAULT '',
    response    bytea       NOT NULL,
    create_time timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, method, request_id)
);
CREATE INDEX request_log_by_id ON request_log (tenant, request_id);
CREATE INDEX request_log_age ON request_log (create_time);
DROP TABLE request_t;
