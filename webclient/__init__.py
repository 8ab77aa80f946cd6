"""webclient: the stream-integrity layer for LLM Server-Sent-Events streams.

    response bytes -> one persistent UTF-8 decoder -> one persistent SSE parser -> complete events
      -> route-specific delta accumulation -> completion and schema checks -> committed output

The core is sans-I/O (no clock, no asyncio, no ``js``); transports live in ``webclient.browser``
(Pyodide) and ``webclient.httpx`` (CPython gateways).
"""

from __future__ import annotations

from ._deadlines import DEFAULT_DEADLINES, Deadlines, DeadlineTracker
from ._errors import UsageError, WebclientError
from ._events import RetryField, SSEEvent, SSEItem
from ._limits import DEFAULT_LIMITS, Limits
from ._outcome import Failure, Outcome
from ._pipeline import EventStreamParser
from ._resume import RequestSpec, ResumePlan, ResumePoint, ResumePolicy, plan_resume
from ._retry import AttemptResult, RetryAdvice, RetryDecision, advise_retry
from ._schema import JsonschemaValidator, SchemaValidator, validator_for
from ._session import StreamSession
from ._sse import SSEParser
from ._telemetry import Telemetry
from ._updates import (
    ChoiceResult,
    Committed,
    Failed,
    ProviderError,
    StreamResult,
    TextDelta,
    ToolCall,
    ToolCallUpdate,
    ToolInputDelta,
    Update,
)
from ._utf8 import UTF8Decoder

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_DEADLINES",
    "DEFAULT_LIMITS",
    "AttemptResult",
    "ChoiceResult",
    "Committed",
    "DeadlineTracker",
    "Deadlines",
    "EventStreamParser",
    "Failed",
    "Failure",
    "JsonschemaValidator",
    "Limits",
    "Outcome",
    "ProviderError",
    "RequestSpec",
    "ResumePlan",
    "ResumePoint",
    "ResumePolicy",
    "RetryAdvice",
    "RetryDecision",
    "RetryField",
    "SSEEvent",
    "SSEItem",
    "SSEParser",
    "SchemaValidator",
    "StreamResult",
    "StreamSession",
    "Telemetry",
    "TextDelta",
    "ToolCall",
    "ToolCallUpdate",
    "ToolInputDelta",
    "UTF8Decoder",
    "Update",
    "UsageError",
    "WebclientError",
    "__version__",
    "advise_retry",
    "plan_resume",
    "validator_for",
]
