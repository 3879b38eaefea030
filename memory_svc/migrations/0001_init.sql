-- MemoryService schema: four scopes of memory plus documents, every row keyed by tenant.
-- Vectors are vector(384) (bge-small-en-v1.5 and all-MiniLM-L6-v2); every vector row records
-- the model that made it and searches filter on it, so vectors of two models never mix.
-- A model of another dimension needs new tables (or columns) in a later migration.

CREATE TABLE session_memories (
    tenant           text        NOT NULL,
    id               uuid        PRIMARY KEY,
    session_id       uuid        NOT NULL,
    agent_id         uuid        NOT NULL,
    user_id          uuid,
    content          text        NOT NULL,
    content_hash     bytea       NOT NULL,
    embedding        vector(384) NOT NULL,
    embedding_model  text        NOT NULL,
    importance       real        NOT NULL DEFAULT 1,
    metadata         jsonb       NOT NULL DEFAULT '{}',
    create_time      timestamptz NOT NULL DEFAULT now(),
    update_time      timestamptz NOT NULL DEFAULT now(),
    expire_time      timestamptz NOT NULL,
    version          bigint      NOT NULL DEFAULT 1,
    fts              tsvector    GENERATED ALWAYS AS (to_tsvector('english', content)) STORED
);
CREATE UNIQUE INDEX session_memories_dedup ON session_memories
    (tenant, session_id, agent_id, user_id, embedding_model, content_hash) NULLS NOT DISTINCT;
CREATE INDEX session_memories_owner ON session_memories
    (tenant, session_id, embedding_model, expire_time);
CREATE INDEX session_memories_list ON session_memories (tenant, create_time DESC, id DESC);
CREATE INDEX session_memories_expiry ON session_memories (expire_time);
CREATE INDEX session_memories_embedding ON session_memories
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
CREATE INDEX session_memories_metadata ON session_memories USING gin (metadata);
CREATE INDEX session_memories_fts ON session_memories USING gin (fts);

CREATE TABLE user_memories (
    tenant           text        NOT NULL,
    id               uuid        PRIMARY KEY,
    agent_id         uuid        NOT NULL,
    user_id          uuid        NOT NULL,
    content          text        NOT NULL,
    content_hash     bytea       NOT NULL,
    embedding        vector(384) NOT NULL,
    embedding_model  text        NOT NULL,
    memory_type      text        NOT NULL CHECK (memory_type IN ('fact', 'preference', 'summary')),
    importance       real        NOT NULL DEFAULT 1,
    access_count     bigint      NOT NULL DEFAULT 0,
    last_access_time timestamptz,
    source_memory_id uuid,
    metadata         jsonb       NOT NULL DEFAULT '{}',
    create_time      timestamptz NOT NULL DEFAULT now(),
    update_time      timestamptz NOT NULL DEFAULT now(),
    version          bigint      NOT NULL DEFAULT 1,
    fts              tsvector    GENERATED ALWAYS AS (to_tsvector('english', content)) STORED
);
CREATE UNIQUE INDEX user_memories_dedup ON user_memories
    (tenant, agent_id, user_id, embedding_model, content_hash);
CREATE INDEX user_memories_owner ON user_memories (tenant, user_id, embedding_model, agent_id);
CREATE INDEX user_memories_list ON user_memories (tenant, create_time DESC, id DESC);
CREATE INDEX user_memories_embedding ON user_memories
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
CREATE INDEX user_memories_metadata ON user_memories USING gin (metadata);
CREATE INDEX user_memories_fts ON user_memories USING gin (fts);

CREATE TABLE agent_memories (
    tenant           text        NOT NULL,
    id               uuid        PRIMARY KEY,
    agent_id         uuid        NOT NULL,
    content          text        NOT NULL,
    content_hash     bytea       NOT NULL,
    embedding        vector(384) NOT NULL,
    embedding_model  text        NOT NULL,
    memory_type      text        NOT NULL
        CHECK (memory_type IN ('learning', 'state', 'persona', 'scratchpad')),
    importance       real        NOT NULL DEFAULT 1,
    source_memory_id uuid,
    metadata         jsonb       NOT NULL DEFAULT '{}',
    create_time      timestamptz NOT NULL DEFAULT now(),
    update_time      timestamptz NOT NULL DEFAULT now(),
    version          bigint      NOT NULL DEFAULT 1,
    fts              tsvector    GENERATED ALWAYS AS (to_tsvector('english', content)) STORED
);
CREATE UNIQUE INDEX agent_memories_dedup ON agent_memories
    (tenant, agent_id, embedding_model, content_hash);
CREATE INDEX agent_memories_owner ON agent_memories (tenant, agent_id, embedding_model);
CREATE INDEX agent_memories_list ON agent_memories (tenant, create_time DESC, id DESC);
CREATE INDEX agent_memories_embedding ON agent_memories
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
CREATE INDEX agent_memories_metadata ON agent_memories USING gin (metadata);
CREATE INDEX agent_memories_fts ON agent_memories USING gin (fts);

CREATE TABLE documents (
    tenant          text        NOT NULL,
    id              uuid        PRIMARY KEY,
    knowledge_base  text        NOT NULL,
    source          text        NOT NULL DEFAULT '',
    title           text        NOT NULL DEFAULT '',
    content_hash    text        NOT NULL,
    content_length  bigint      NOT NULL,
    token_count     integer     NOT NULL,
    chunk_count     integer     NOT NULL,
    chunk_tokens    integer     NOT NULL,
    overlap_tokens  integer     NOT NULL,
    embedding_model text        NOT NULL,
    metadata        jsonb       NOT NULL DEFAULT '{}',
    create_time     timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX documents_dedup ON documents
    (tenant, knowledge_base, embedding_model, content_hash);
CREATE INDEX documents_list ON documents (tenant, create_time DESC, id DESC);
CREATE INDEX documents_metadata ON documents USING gin (metadata);

-- Organizational memory: the chunks of ingested documents.
CREATE TABLE document_chunks (
    tenant          text        NOT NULL,
    id              uuid        PRIMARY KEY,
    document_id     uuid        NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    knowledge_base  text        NOT NULL,
    source          text        NOT NULL DEFAULT '',
    chunk_index     integer     NOT NULL,
    content         text        NOT NULL,
    embedding       vector(384) NOT NULL,
    embedding_model text        NOT NULL,
    metadata        jsonb       NOT NULL DEFAULT '{}',
    create_time     timestamptz NOT NULL DEFAULT now(),
    fts             tsvector    GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    UNIQUE (document_id, chunk_index)
);
CREATE INDEX document_chunks_owner ON document_chunks (tenant, embedding_model, knowledge_base);
CREATE INDEX document_chunks_list ON document_chunks (tenant, create_time DESC, id DESC);
CREATE INDEX document_chunks_embedding ON document_chunks
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
CREATE INDEX document_chunks_metadata ON document_chunks USING gin (metadata);
CREATE INDEX document_chunks_fts ON document_chunks USING gin (fts);

-- Answers to mutating requests that carried a request_id, so a retry gets the first answer.
CREATE TABLE request_log (
    tenant      text        NOT NULL,
    method      text        NOT NULL,
    request_id  uuid        NOT NULL,
    response    bytea       NOT NULL,
    create_time timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, method, request_id)
);
CREATE INDEX request_log_age ON request_log (create_time);
