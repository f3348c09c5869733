"""Runtime prediction and start-time prediction (issue 27).

- :mod:`xce.predict.protocol`: the :class:`RuntimePredictor` extension point, the jobs it
  learns from (:class:`FinishedJob`) and is asked about (:class:`Asked`).
- :mod:`xce.predict.predictors`: the builtins ``limit``, ``fraction``, ``history``.
- :mod:`xce.predict.registry`: predictors by name (entry-point group ``xce.predictors``).
- :mod:`xce.predict.history`: finished jobs from a history file (``sacct --json``,
  ``qstat -x -F json``, ``bjobs -a -json``, an SWF trace).
- :mod:`xce.predict.forward`: a snapshot replayed forward, jobs ending at their
  predicted runtimes: every pending job's predicted start.
"""

from xce.predict.predictors import (
    FractionPredictor,
    HistoryPredictor,
    LimitPredictor,
    learn,
    raised,
)
from xce.predict.protocol import Asked, FinishedJob, RuntimePredictor
from xce.predict.registry import (
    DEFAULT_PREDICTOR,
    PREDICTOR_GROUP,
    PredictorRegistry,
    default_predictors,
)

__all__ = [
    "DEFAULT_PREDICTOR",
    "PREDICTOR_GROUP",
    "Asked",
    "FinishedJob",
    "FractionPredictor",
    "HistoryPredictor",
    "LimitPredictor",
    "PredictorRegistry",
    "RuntimePredictor",
    "default_predictors",
    "learn",
    "raised",
]
