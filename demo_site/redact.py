"""Keep the key out of what the proxy hands to the page, even when the upstream echoes it.

Some gateways put the credential they were sent into an error message ("invalid key sk-..."), a debug header
or, misconfigured, a stream. The proxy streams the upstream's bytes to the page as they come, so
:class:`SecretFilter` replaces every occurrence of the key in a byte stream with :data:`REDACTED` whatever the
chunking: it holds back the end of a chunk only while that end could be the start of the key (at most
``len(key) - 1`` bytes, and for an SSE chunk ending in a blank line none at all, so events are not delayed).
Partial echoes (a masked ``sk-ab…yz``) are the upstream's own business and pass unchanged.
"""

from __future__ import annotations

from typing import Final

#: What stands in for the key.
REDACTED: Final = b"[redacted]"


class SecretFilter:
    """``feed(chunk)`` returns the bytes that may go out now; ``end()`` the held tail once the stream is over."""

    __slots__ = ("_held", "_secret")

    def __init__(self, secret: bytes) -> None:
        if not secret:
            raise ValueError("the secret must not be empty")
        self._secret = secret
        self._held = b""

    def feed(self, chunk: bytes) -> bytes:
        data = self._held + chunk if self._held else chunk
        secret = self._secret
        if secret in data:
            parts = data.split(secret)
            tail = parts[-1]
            keep = self._prefix_at_end(tail)
            parts[-1] = tail[: len(tail) - keep]
            self._held = tail[len(tail) - keep:]
            return REDACTED.join(parts)
        keep = self._prefix_at_end(data)
        self._held = data[len(data) - keep:] if keep else b""
        return data[: len(data) - keep] if keep else data

    def end(self) -> bytes:
        """The held bytes (a proper prefix of the key, not the key): the stream ended without the rest."""
        held, self._held = self._held, b""
        return held

    def _prefix_at_end(self, data: bytes) -> int:
        """The length of the longest end of ``data`` that is a proper prefix of the secret (0 if none)."""
        secret = self._secret
        first = secret[0]
        start = max(0, len(data) - len(secret) + 1)
        pos = data.find(first, start)
        while pos >= 0:
            if secret.startswith(data[pos:]):
                return len(data) - pos
            pos = data.find(first, pos + 1)
        return 0

    def text(self, value: str) -> str:
        """A header value with every occurrence of the key replaced (header values are latin-1)."""
        secret = self._secret.decode("latin-1")
        return value.replace(secret, REDACTED.decode()) if secret in value else value
