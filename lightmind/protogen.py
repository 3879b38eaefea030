"""Generates the Python stubs (``*_pb2.py``, ``*_pb2_grpc.py`` and their ``.pyi``) from protos/.

``python -m lightmind.protogen`` rewrites the checked-in stubs; ``--check`` regenerates into a
temporary directory and exits non-zero, listing the files, when the checked-in ones differ.
The stubs land beside this package (``lightmind/<domain>/v1``) because protoc derives the
Python module path from the proto package path.
"""

from __future__ import annotations

import argparse
import filecmp
import importlib.resources
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROTO_ROOT = REPO / "protos"
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")


def proto_files() -> list[Path]:
    """Every .proto under protos/, sorted for a stable command line."""
    return sorted(PROTO_ROOT.rglob("*.proto"))


def generate(out_dir: Path) -> list[Path]:
    """Runs protoc into ``out_dir``; returns the generated files relative to it."""
    from grpc_tools import protoc

    well_known = importlib.resources.files("grpc_tools") / "_proto"
    bin_dir = Path(sys.executable).parent
    files = [str(p.relative_to(PROTO_ROOT)) for p in proto_files()]
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"-I{well_known}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        f"--plugin=protoc-gen-mypy={bin_dir / 'protoc-gen-mypy'}",
        f"--plugin=protoc-gen-mypy_grpc={bin_dir / 'protoc-gen-mypy_grpc'}",
        f"--mypy_out={out_dir}",
        f"--mypy_grpc_out={out_dir}",
        *files,
    ]
    code = protoc.main(args)
    if code != 0:
        raise SystemExit(f"protoc failed with exit code {code}")
    generated = [p for p in out_dir.rglob("*") if p.name.endswith(GENERATED_SUFFIXES)]
    for path in generated:
        # Packages need an __init__.py at every level for setuptools to pick them up.
        for parent in path.relative_to(out_dir).parents:
            if str(parent) != ".":
                (out_dir / parent / "__init__.py").touch()
    return sorted(p.relative_to(out_dir) for p in generated)


def checked_in() -> list[Path]:
    """The generated files currently in the tree, relative to the repo root."""
    found = []
    for domain_dir in (REPO / "lightmind").iterdir():
        if domain_dir.is_dir():
            for path in domain_dir.rglob("*"):
                if path.name.endswith(GENERATED_SUFFIXES):
                    found.append(path.relative_to(REPO))
    return sorted(found)


def stale_files() -> list[str]:
    """Generated files that are missing, extra or different from a fresh generation."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = set(generate(Path(tmp)))
        current = set(checked_in())
        problems = [f"missing: {p}" for p in sorted(fresh - current)]
        problems += [f"extra: {p}" for p in sorted(current - fresh)]
        for rel in sorted(fresh & current):
            if not filecmp.cmp(Path(tmp) / rel, REPO / rel, shallow=False):
                problems.append(f"differs: {rel}")
        return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if checked-in stubs are stale")
    args = parser.parse_args(argv)
    if args.check:
        problems = stale_files()
        for line in problems:
            print(line, file=sys.stderr)
        if problems:
            print("stubs are stale: run `make protos`", file=sys.stderr)
            return 1
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(Path(tmp))
        for rel in checked_in():
            (REPO / rel).unlink()
        for rel in fresh:
            target = REPO / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            for parent in rel.parents:
                if str(parent) != ".":
                    (REPO / parent / "__init__.py").touch()
            shutil.copyfile(Path(tmp) / rel, target)
            print(rel)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
