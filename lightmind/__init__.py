"""Lightmind: memory, skills and an orchestration loop for AI agents.

This package is the thin runtime every service shares (configuration, server bootstrap,
errors, tenancy, database) plus the Python stubs generated from ``protos/`` (the
``lightmind.<domain>.v1`` subpackages) and the ``lightmind`` command line.
"""

from __future__ import annotations

__version__ = "0.1.0"
