"""The ``lightmind`` command: ``up`` (every service, one machine), ``models`` (list, pull),
``keys`` (create, revoke, list API keys), ``ingest`` (files into organizational memory),
``skills import`` (Agent Skills folders) and ``chat`` (talk to an agent)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path


def _models_pull(args: argparse.Namespace) -> int:
    from embedding_svc.pull import PullError, pull

    model_dir = Path(args.model_dir or os.environ.get("LIGHTMIND_MODEL_DIR") or "models").resolve()
    try:
        target = pull(args.name, model_dir, endpoint=args.endpoint)
    except PullError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.name}: ready in {target}")
    return 0


def _models_list(args: argparse.Namespace) -> int:
    from embedding_svc.models import DEFAULT_MODEL, REGISTRY

    for spec in REGISTRY.values():
        marker = " (offline default)" if spec.name == DEFAULT_MODEL else ""
        print(
            f"{spec.name:<24} {spec.dimensions} dims, {spec.pooling.value} pooling, "
            f"{spec.max_tokens} tokens{marker}"
        )
    return 0


def _keys_file(args: argparse.Namespace) -> Path:
    value = args.file or os.environ.get("LIGHTMIND_API_KEYS_FILE")
    if not value:
        value = str(Path(os.environ.get("LIGHTMIND_DATA_DIR") or "data") / "api-keys.json")
    return Path(value).expanduser().resolve()


def _keys_create(args: argparse.Namespace) -> int:
    from lightmind.apikeys import KeyFile

    try:
        record, key = KeyFile(_keys_file(args)).create(args.tenant)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"created key {record.id} for tenant {record.tenant} in {_keys_file(args)}")
    print("the key (shown once; send it as 'authorization: Bearer <key>'):")
    print(key)
    return 0


def _keys_revoke(args: argparse.Namespace) -> int:
    from lightmind.apikeys import KeyFile

    try:
        record = KeyFile(_keys_file(args)).revoke(args.id)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    print(f"revoked key {record.id} of tenant {record.tenant}")
    return 0


def _keys_list(args: argparse.Namespace) -> int:
    from lightmind.apikeys import KeyFile

    for record in KeyFile(_keys_file(args)).load():
        state = "revoked" if record.revoked_at else "active"
        print(f"{record.id}  {record.tenant:<24} {state}")
    return 0


def _ingest(args: argparse.Namespace) -> int:
    from lightmind.client_commands import run_ingest

    return run_ingest(args.paths, args.knowledge_base, args.chunk_tokens, args.overlap)


def _skills_import(args: argparse.Namespace) -> int:
    from lightmind.client_commands import run_import_skills

    return run_import_skills(args.folder, args.overwrite)


def _up(args: argparse.Namespace) -> int:
    from lightmind import launcher, logs

    logs.configure("warning")
    return asyncio.run(launcher.up())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lightmind", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    up = commands.add_parser("up", help="start every service with the embedded database")
    up.set_defaults(run=_up)

    models = commands.add_parser("models", help="embedding models")
    model_commands = models.add_subparsers(dest="models_command", required=True)
    listing = model_commands.add_parser("list", help="the models this build knows")
    listing.set_defaults(run=_models_list)
    pulling = model_commands.add_parser("pull", help="download a model from the Hugging Face hub")
    pulling.add_argument("name")
    pulling.add_argument("--model-dir", help="default: $LIGHTMIND_MODEL_DIR or ./models")
    pulling.add_argument("--endpoint", help="hub or mirror URL (default: $HF_ENDPOINT or the hub)")
    pulling.set_defaults(run=_models_pull)

    keys = commands.add_parser("keys", help="API keys (stored hashed in a keys file)")
    keys.add_argument("--file", help="default: $LIGHTMIND_API_KEYS_FILE or ./data/api-keys.json")
    key_commands = keys.add_subparsers(dest="keys_command", required=True)
    creating = key_commands.add_parser("create", help="create a key for a tenant")
    creating.add_argument("--tenant", required=True)
    creating.set_defaults(run=_keys_create)
    revoking = key_commands.add_parser("revoke", help="revoke a key by its id")
    revoking.add_argument("id")
    revoking.set_defaults(run=_keys_revoke)
    key_commands.add_parser("list", help="list keys (ids and tenants)").set_defaults(run=_keys_list)

    ingest = commands.add_parser(
        "ingest", help="ingest files or folders into organizational memory (MemoryService)"
    )
    ingest.add_argument("paths", nargs="+", metavar="PATH")
    ingest.add_argument("--knowledge-base", default="", help="default: the 'default' base")
    ingest.add_argument("--chunk-tokens", type=int, default=0, help="0: the server's default")
    ingest.add_argument("--overlap", type=int, default=0, help="0: the server's default")
    ingest.set_defaults(run=_ingest)

    skills = commands.add_parser("skills", help="skills in SkillService")
    skill_commands = skills.add_subparsers(dest="skills_command", required=True)
    importing = skill_commands.add_parser("import", help="import Agent Skills folders (SKILL.md)")
    importing.add_argument("folder", metavar="DIR")
    importing.add_argument("--overwrite", action="store_true", help="update same-named skills")
    importing.set_defaults(run=_skills_import)

    from lightmind import chat_cli

    chat_cli.add_parser(commands)

    args = parser.parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
