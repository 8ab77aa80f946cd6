"""The plain, immutable objects the SSE layer produces.

They are ``NamedTuple`` subclasses rather than frozen dataclasses: ``tuple.__new__`` is several
times cheaper than a frozen dataclass ``__init__``. They are still immutable, typed and
self-describing.

Event tuples
    Inside the library an event is a plain ``(type, data, last_event_id)`` tuple, an
    :data:`EventTuple`: the parser builds one per dispatched event on the hottest path, and the
    session hands it to the route as it is. A plain tuple costs a fraction of a tuple subclass to
    build and to free (the subclass goes through the generic allocator and ``subtype_dealloc``):
    a 5 MB Anthropic-shaped stream of 40k events, fed in 17 KiB pieces, parsed 1.5-2x as fast in
    CPython 3.11 and in Pyodide 314 (1.3x in 1 KiB chunks; ``build_scripts/BENCHMARKS.md``). ``SSEParser.feed`` and
    ``EventStreamParser.feed`` wrap each one as an :class:`SSEEvent` (:func:`as_events`), whose
    fields have names; their ``feed_tuples`` return them as built. Both give the same items in
    the same order: an :class:`SSEEvent` equals the :data:`EventTuple` it wraps.
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

#: An event as the parser builds it and the session consumes it: ``(type, data, last_event_id)``,
#: the fields of :class:`SSEEvent` in its order (see "Event tuples").
EventTuple = tuple[str, str, str]
#: What ``feed_tuples`` returns: event tuples and the retry fields between them, in stream order.
TupleItem = EventTuple | RetryField

# ``tuple.__new__`` directly: NamedTuple's ``_make`` adds a Python-level frame per event.
_tuple_new = tuple.__new__


def as_events(items: list[TupleItem]) -> list[SSEItem]:
    """``items`` with each :data:`EventTuple` wrapped as the :class:`SSEEvent` of the same fields
    (retry fields as they are)."""
    if not items:
        return []
    return [_tuple_new(SSEEvent, item) if item.__class__ is tuple else item for item in items]  # type: ignore[misc]
