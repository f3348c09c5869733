"""Importers: read what real schedulers print and build a state-file dict.

Each importer returns an :class:`ImportResult`: the state as a plain dict (the state
file's format, validated by :func:`xce.cluster.state_from_dict`) and a
:class:`ImportReport` saying what was mapped and what was not.
"""

from __future__ import annotations

from xce.importers.lsf import import_lsf as import_lsf
from xce.importers.lsf import read_lsf_documents as read_lsf_documents
from xce.importers.pbs import import_pbs, read_pbs_documents
from xce.importers.report import ImportReport, ImportResult
from xce.importers.slurm import import_slurm, read_slurm_documents

__all__ = [
    "ImportReport",
    "ImportResult",
    "import_pbs",
    "import_slurm",
    "read_pbs_documents",
    "read_slurm_documents",
]
