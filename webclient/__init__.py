"""webclient: the stream-integrity layer for LLM Server-Sent-Events streams.

    response bytes -> one persistent UTF-8 decoder -> one persistent SSE parser -> complete events
      -> route-specific delta accumulation -> completion and schema checks -> committed output

The core is sans-I/O (no clock, no asyncio, no ``js``); transports live in ``webclient.browser``
(Pyodide) and ``webclient.httpx`` (CPython gateways).
"""

from __future__ import annotations

from ._errors import UsageError, WebclientError
from ._events import RetryField, SSEEvent, SSEItem
from ._limits import DEFAULT_LIMITS, Limits
from ._outcome import Failure, Outcome
from ._pipeline import EventStreamParser
from ._sse import SSEParser
from ._utf8 import UTF8Decoder

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_LIMITS",
    "EventStreamParser",
    "Failure",
    "Limits",
    "Outcome",
    "RetryField",
    "SSEEvent",
    "SSEItem",
    "SSEParser",
    "UTF8Decoder",
    "UsageError",
    "WebclientError",
    "__version__",
]
