"""The plain, immutable objects the SSE layer produces.

They are ``NamedTuple`` subclasses rather than frozen dataclasses because one is built per
dispatched event on the hottest path of the library: ``tuple.__new__`` is several times cheaper
than a frozen dataclass ``__init__``. They are still immutable, typed and self-describing.
"""

from __future__ import annotations

from typing import NamedTuple


class SSEEvent(NamedTuple):
    """One dispatched event (WHATWG "dispatch the event", steps 4-6)."""

    #: The event type; ``"message"`` when the stream sent no (or an empty) ``event`` field.
    type: str
    #: The data buffer with its single trailing LF removed.
    data: str
    #: The last event ID string at dispatch time (persists across events; ``""`` if never set).
    last_event_id: str


class RetryField(NamedTuple):
    """An accepted ``retry`` field: the new reconnection time in milliseconds.

    WHATWG applies ``retry`` when the line is processed, not at dispatch, so it is reported in
    stream order at that point.
    """

    retry: int


SSEItem = SSEEvent | RetryField
