"""The checked-in Python stubs are what `make protos` would generate from protos/."""

from __future__ import annotations

from lightmind import protogen


def test_generated_stubs_are_fresh() -> None:
    assert protogen.stale_files() == []
