-- SkillService storage, after the design book's skill_t, tool_t, tool_param_t, agent_skill_t,
-- skill_tool_t and skill_dependency_t. Every row is keyed by host_id (the tenant); optimistic
-- concurrency by aggregate_version (exposed as the etag).

CREATE TABLE IF NOT EXISTS skill_t (
    host_id text NOT NULL,
    skill_id uuid NOT NULL,
    parent_skill_id uuid,
    name varchar(64) NOT NULL,
    description varchar(500) NOT NULL,
    content_markdown text NOT NULL,
    description_embedding vector(384),
    embedding_model text,
    version varchar(20) NOT NULL DEFAULT '1.0.0',
    license text NOT NULL DEFAULT '',
    metadata jsonb NOT NULL DEFAULT '{}',
    aggregate_version bigint NOT NULL DEFAULT 1,
    active boolean NOT NULL DEFAULT true,
    create_ts timestamptz NOT NULL DEFAULT now(),
    update_ts timestamptz NOT NULL DEFAULT now(),
    update_user varchar(126) NOT NULL DEFAULT '',
    PRIMARY KEY (host_id, skill_id),
    UNIQUE (host_id, name),
    FOREIGN KEY (host_id, parent_skill_id) REFERENCES skill_t (host_id, skill_id)
);
CREATE INDEX IF NOT EXISTS idx_skill_active ON skill_t (host_id, active);
CREATE INDEX IF NOT EXISTS idx_skill_embedding ON skill_t
    USING hnsw (description_embedding vector_cosine_ops);

CREATE TABLE IF NOT EXISTS tool_t (
    host_id text NOT NULL,
    tool_id uuid NOT NULL,
    name varchar(128) NOT NULL,
    description text NOT NULL,
    implementation_type varchar(20) NOT NULL
        CHECK (implementation_type IN ('python', 'rest', 'mcp_server', 'script')),
    implementation jsonb NOT NULL,
    output_schema jsonb,
    annotations jsonb NOT NULL DEFAULT '{}',
    required_access_level varchar(10)
        CHECK (required_access_level IN ('read', 'write', 'execute')),
    description_embedding vector(384),
    embedding_model text,
    version varchar(20) NOT NULL DEFAULT '1.0.0',
    aggregate_version bigint NOT NULL DEFAULT 1,
    active boolean NOT NULL DEFAULT true,
    create_ts timestamptz NOT NULL DEFAULT now(),
    update_ts timestamptz NOT NULL DEFAULT now(),
    update_user varchar(126) NOT NULL DEFAULT '',
    PRIMARY KEY (host_id, tool_id),
    UNIQUE (host_id, name)
);
CREATE INDEX IF NOT EXISTS idx_tool_active ON tool_t (host_id, active);
CREATE INDEX IF NOT EXISTS idx_tool_embedding ON tool_t
    USING hnsw (description_embedding vector_cosine_ops);

CREATE TABLE IF NOT EXISTS tool_param_t (
    host_id text NOT NULL,
    param_id uuid NOT NULL,
    tool_id uuid NOT NULL,
    name varchar(255) NOT NULL,
    param_type varchar(50) NOT NULL
        CHECK (param_type IN ('string', 'number', 'integer', 'boolean', 'object', 'array')),
    required boolean NOT NULL DEFAULT true,
    default_value jsonb,
    description text NOT NULL DEFAULT '',
    validation_schema jsonb,
    order_index integer NOT NULL DEFAULT 0,
    aggregate_version bigint NOT NULL DEFAULT 1,
    active boolean NOT NULL DEFAULT true,
    update_ts timestamptz NOT NULL DEFAULT now(),
    update_user varchar(126) NOT NULL DEFAULT '',
    PRIMARY KEY (host_id, param_id),
    UNIQUE (host_id, tool_id, name),
    FOREIGN KEY (host_id, tool_id) REFERENCES tool_t (host_id, tool_id) ON DELETE CASCADE
);

CREATE TABLE IF NOT EXISTS agent_skill_t (
    host_id text NOT NULL,
    agent_def_id varchar(126) NOT NULL,
    skill_id uuid NOT NULL,
    config jsonb NOT NULL DEFAULT '{}',
    priority integer NOT NULL DEFAULT 0,
    sequence_id integer NOT NULL DEFAULT 0,
    timeout_seconds integer NOT NULL DEFAULT 0,
    max_retries integer NOT NULL DEFAULT 0,
    allowed_users text[] NOT NULL DEFAULT '{}',
    aggregate_version bigint NOT NULL DEFAULT 1,
    active boolean NOT NULL DEFAULT true,
    update_ts timestamptz NOT NULL DEFAULT now(),
    update_user varchar(126) NOT NULL DEFAULT '',
    PRIMARY KEY (host_id, agent_def_id, skill_id),
    FOREIGN KEY (host_id, skill_id) REFERENCES skill_t (host_id, skill_id) ON DELETE CASCADE
);

CREATE TABLE IF NOT EXISTS skill_tool_t (
    host_id text NOT NULL,
    skill_id uuid NOT NULL,
    tool_id uuid NOT NULL,
    config jsonb NOT NULL DEFAULT '{}',
    access_level varchar(10) NOT NULL DEFAULT 'read'
        CHECK (access_level IN ('read', 'write', 'execute')),
    aggregate_version bigint NOT NULL DEFAULT 1,
    active boolean NOT NULL DEFAULT true,
    update_ts timestamptz NOT NULL DEFAULT now(),
    update_user varchar(126) NOT NULL DEFAULT '',
    PRIMARY KEY (host_id, skill_id, tool_id),
    FOREIGN KEY (host_id, skill_id) REFERENCES skill_t (host_id, skill_id) ON DELETE CASCADE,
    FOREIGN KEY (host_id, tool_id) REFERENCES tool_t (host_id, tool_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS idx_skill_tool_tool ON skill_tool_t (host_id, tool_id);

CREATE TABLE IF NOT EXISTS skill_dependency_t (
    host_id text NOT NULL,
    skill_id uuid NOT NULL,
    depends_on_skill_id uuid NOT NULL,
    required boolean NOT NULL DEFAULT true,
    aggregate_version bigint NOT NULL DEFAULT 1,
    active boolean NOT NULL DEFAULT true,
    update_ts timestamptz NOT NULL DEFAULT now(),
    update_user varchar(126) NOT NULL DEFAULT '',
    PRIMARY KEY (host_id, skill_id, depends_on_skill_id),
    CHECK (skill_id <> depends_on_skill_id),
    FOREIGN KEY (host_id, skill_id) REFERENCES skill_t (host_id, skill_id) ON DELETE CASCADE,
    FOREIGN KEY (host_id, depends_on_skill_id) REFERENCES skill_t (host_id, skill_id)
        ON DELETE CASCADE
);

-- The non-SKILL.md files of an imported Agent Skills folder, so an export reproduces it.
CREATE TABLE IF NOT EXISTS skill_file_t (
    host_id text NOT NULL,
    skill_id uuid NOT NULL,
    path text NOT NULL,
    content bytea NOT NULL,
    PRIMARY KEY (host_id, skill_id, path),
    FOREIGN KEY (host_id, skill_id) REFERENCES skill_t (host_id, skill_id) ON DELETE CASCADE
);

-- Answers to mutating requests that carried a request_id (ExecuteTool results included),
-- so a repeat returns the first answer.
CREATE TABLE IF NOT EXISTS request_t (
    host_id text NOT NULL,
    request_id uuid NOT NULL,
    method text NOT NULL,
    fingerprint text NOT NULL,
    response bytea NOT NULL,
    create_ts timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (host_id, request_id)
);
CREATE INDEX IF NOT EXISTS idx_request_created ON request_t (create_ts);
