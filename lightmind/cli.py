"""The ``lightmind`` command: ``up`` (every service, one machine), ``models`` (list, pull) and
``chat`` (talk to an agent)."""

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

    from lightmind import chat_cli

    chat_cli.add_parser(commands)

    args = parser.parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
