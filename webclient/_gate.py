"""The response gate: may this HTTP response body be parsed as an event stream at all?

Checked once, from the status line and the ``Content-Type`` header, before a single body byte
reaches the SSE parser. A gateway error page (HTML, a JSON error envelope, a 301 to a login page)
must never be fed to the parser, where a stray ``data:`` line could pass for an event.

Rules
    * The status must be the route's success status (200 on every route webclient knows).
    * The media type *essence* (RFC 9110 §8.3.1 / WHATWG MIME: ``type/subtype``, case-insensitive,
      parameters such as ``charset`` ignored, surrounding whitespace trimmed) must be
      ``text/event-stream``. A missing header fails.

A failure is ``protocol_error`` with stage ``"status"`` (checked first) or ``"media_type"``.
"""

from __future__ import annotations

from ._errors import UsageError
from ._outcome import Failure, Outcome

EVENT_STREAM_ESSENCE = "text/event-stream"

# HTTP whitespace (WHATWG "HTTP whitespace"): trimmed around the essence.
_HTTP_WHITESPACE = " \t\r\n"


def media_type_essence(content_type: str | None) -> str | None:
    """``"Text/Event-Stream; charset=utf-8"`` -> ``"text/event-stream"``; ``None`` if absent."""
    if content_type is None:
        return None
    if content_type == EVENT_STREAM_ESSENCE:  # the usual header, already its own essence
        return EVENT_STREAM_ESSENCE
    essence = content_type.split(";", 1)[0].strip(_HTTP_WHITESPACE).lower()
    return essence or None


def is_event_stream(content_type: str | None) -> bool:
    """Whether the media type essence is exactly ``text/event-stream``."""
    return media_type_essence(content_type) == EVENT_STREAM_ESSENCE


def check_response(status: int, content_type: str | None, success_status: int = 200) -> Failure | None:
    """Return the gate failure for this response, or ``None`` when the body may be parsed.

    Raises :class:`~webclient.UsageError` when ``status`` is not an int or ``content_type`` is
    neither a string nor ``None`` (caller bugs, not bad responses).
    """
    if isinstance(status, bool) or not isinstance(status, int):
        raise UsageError("status must be an int")
    if content_type is not None and not isinstance(content_type, str):
        raise UsageError("content_type must be a str or None")
    if status != success_status:
        return Failure(Outcome.PROTOCOL_ERROR, "status")
    if not is_event_stream(content_type):
        return Failure(Outcome.PROTOCOL_ERROR, "media_type")
    return None
