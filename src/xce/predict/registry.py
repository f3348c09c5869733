"""Runtime predictors by name: the builtins and those installed packages advertise in
the entry-point group ``xce.predictors``."""

from __future__ import annotations

from xce.entry import NamedRegistry
from xce.predict.predictors import FractionPredictor, HistoryPredictor, LimitPredictor
from xce.predict.protocol import RuntimePredictor

__all__ = ["DEFAULT_PREDICTOR", "PREDICTOR_GROUP", "PredictorRegistry", "default_predictors"]

PREDICTOR_GROUP = "xce.predictors"
DEFAULT_PREDICTOR = HistoryPredictor.name


class PredictorRegistry(NamedRegistry[RuntimePredictor]):
    """Predictor prototypes by name (each use takes a :meth:`fresh` one); duplicate
    names are refused."""

    what = "runtime predictor"
    group = PREDICTOR_GROUP
    sort_known = False

    def accepts(self, member: object) -> bool:
        return isinstance(member, RuntimePredictor)

    def make(self, spec: str) -> RuntimePredictor:
        """A fresh predictor for ``NAME`` or ``NAME:OPTION``; bad input when the name is
        unknown or the option malformed."""
        name, _, option = spec.partition(":")
        return self.get(name).fresh(option if ":" in spec else None)


def default_predictors(*, plugins: bool = True) -> PredictorRegistry:
    """The builtin predictors, plus (by default) those found through entry points."""
    registry = PredictorRegistry()
    for predictor in (LimitPredictor(), FractionPredictor(), HistoryPredictor()):
        registry.register(predictor)
    if plugins:
        registry.load_entry_points()
    return registry
