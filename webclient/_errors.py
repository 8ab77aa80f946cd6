"""Exceptions raised by webclient. They mean *the caller* did something wrong.

Bad input never raises out of the public pipeline: it ends as an :class:`~webclient.Outcome` value.
What remains for exceptions is misuse of the API::

    WebclientError          base; never raised directly
    └── UsageError          the caller broke the contract: feed after close, feed after a
                            terminal failure, reuse of a single-use session, invalid arguments

Messages carry state names, counts and sizes only, never payload content.
"""

from __future__ import annotations


class WebclientError(Exception):
    """Base of every exception webclient raises on purpose."""


class UsageError(WebclientError):
    """The caller used an object against its contract (for example ``feed()`` after ``close()``)."""
