"""Cooperative cancellation: one token, checked at documented checkpoints.

Checkpoints: every ``__next__`` of a plan iterator and of a host iterator (spec Req 2
AC 6, Req 3 AC 6), and the start of every job in a session. Once :meth:`CancelToken.cancel`
was called (from any thread), the next checkpoint raises :class:`~xce.errors.Cancelled`.
"""

from __future__ import annotations

from xce.errors import Cancelled

__all__ = ["CancelToken"]


class CancelToken:
    """Set once, from any thread; read at every checkpoint (a plain flag: cheap)."""

    __slots__ = ("_cancelled", "checkpoints")

    def __init__(self) -> None:
        self._cancelled = False
        self.checkpoints = 0

    def cancel(self) -> None:
        """Request cancellation; the work stops at its next checkpoint."""
        self._cancelled = True

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def checkpoint(self) -> None:
        """Raise :class:`Cancelled` if cancellation was requested."""
        self.checkpoints += 1
        if self._cancelled:
            raise Cancelled()
