"""Suite-wide settings: a hypothesis profile that keeps property tests fast and steady.

``deadline=None`` because the first example of a test pays for building the parser;
set ``HYPOTHESIS_PROFILE=thorough`` to search harder locally.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", deadline=None, max_examples=2000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
