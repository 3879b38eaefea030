-- AgentService storage: agents, chat sessions, chat messages, turns (Chat calls) with their
-- events, and stored answers of idempotent requests. Every row carries its tenant.

CREATE TABLE agent (
    tenant          text        NOT NULL,
    id              uuid        NOT NULL,
    name            text        NOT NULL,
    description     text        NOT NULL DEFAULT '',
    system_prompt   text        NOT NULL DEFAULT '',
    model           text        NOT NULL DEFAULT '',
    chat_options    jsonb       NOT NULL DEFAULT '{}',
    knowledge_bases text[]      NOT NULL DEFAULT '{}',
    memory_limits   jsonb       NOT NULL DEFAULT '{}',
    max_iterations  integer     NOT NULL DEFAULT 0,
    extract_facts   boolean     NOT NULL DEFAULT false,
    metadata        jsonb       NOT NULL DEFAULT '{}',
    version         bigint      NOT NULL DEFAULT 1,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, id),
    UNIQUE (tenant, name)
);

CREATE TABLE chat_session (
    tenant      text        NOT NULL,
    id          uuid        NOT NULL,
    agent_id    uuid        NOT NULL,
    user_id     uuid,
    title       text        NOT NULL DEFAULT '',
    metadata    jsonb       NOT NULL DEFAULT '{}',
    -- The one canonical continuity snapshot: {"kind", "version", "state"} (see continuity.py).
    continuity  jsonb,
    version     bigint      NOT NULL DEFAULT 1,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, id),
    FOREIGN KEY (tenant, agent_id) REFERENCES agent (tenant, id) ON DELETE CASCADE
);
CREATE INDEX chat_session_agent_idx ON chat_session (tenant, agent_id, created_at DESC, id DESC);
CREATE INDEX chat_session_user_idx ON chat_session (tenant, user_id, created_at DESC, id DESC);
CREATE INDEX chat_session_created_idx ON chat_session (tenant, created_at DESC, id DESC);

-- One Chat call. request_id makes a retried Chat replay instead of running again.
CREATE TABLE chat_turn (
    tenant      text        NOT NULL,
    id          uuid        NOT NULL,
    session_id  uuid        NOT NULL,
    request_id  uuid,
    status      text        NOT NULL,   -- running, answered, clarifying, failed, cancelled
    created_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    PRIMARY KEY (tenant, id),
    FOREIGN KEY (tenant, session_id) REFERENCES chat_session (tenant, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX chat_turn_request_idx ON chat_turn (tenant, request_id)
    WHERE request_id IS NOT NULL;

CREATE TABLE chat_message (
    tenant       text        NOT NULL,
    id           uuid        NOT NULL,
    session_id   uuid        NOT NULL,
    turn_id      uuid,
    seq          bigserial,
    role         text        NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
    content      text        NOT NULL DEFAULT '',
    tool_calls   jsonb       NOT NULL DEFAULT '[]',
    tool_call_id text        NOT NULL DEFAULT '',
    tool_name    text        NOT NULL DEFAULT '',
    metadata     jsonb       NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, id),
    FOREIGN KEY (tenant, session_id) REFERENCES chat_session (tenant, id) ON DELETE CASCADE
);
CREATE INDEX chat_message_session_idx ON chat_message (tenant, session_id, seq);

-- The events streamed for a turn, serialized ChatResponse messages, for request_id replay.
CREATE TABLE chat_event (
    tenant   text    NOT NULL,
    turn_id  uuid    NOT NULL,
    seq      integer NOT NULL,
    payload  bytea   NOT NULL,
    PRIMARY KEY (tenant, turn_id, seq),
    FOREIGN KEY (tenant, turn_id) REFERENCES chat_turn (tenant, id) ON DELETE CASCADE
);

-- Answers of idempotent unary mutations, by request_id.
CREATE TABLE request_log (
    tenant      text        NOT NULL,
    method      text        NOT NULL,
    request_id  uuid        NOT NULL,
    response    bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, method, request_id)
);
