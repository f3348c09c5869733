"""xce: a batch-job scheduler core for HPC clusters."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
