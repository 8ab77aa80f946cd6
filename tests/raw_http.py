"""A raw HTTP/1.1 client for the demo-server tests: the request target goes on the wire exactly as written.

httpx and browsers normalize paths (``//``, ``..``, percent-encoding) before sending, which is what an attacker
does not do. :func:`request` writes the request line and headers verbatim on a fresh socket with
``Connection: close``, reads until the server closes, and returns the status, the headers (lower-cased names,
every value kept) and the body exactly as it came off the socket (de-chunked when the server chunked it), so a
test can also assert that a response carries *no* body bytes at all.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

#: Seconds a test waits for the server's whole answer before failing.
READ_TIMEOUT = 10.0


@dataclass(frozen=True)
class RawResponse:
    status: int
    headers: dict[str, list[str]]
    body: bytes
    #: The bytes after the blank line, before de-chunking.
    wire_body: bytes

    def header(self, name: str) -> str | None:
        """The header's values joined by ``", "``, or ``None`` when absent."""
        values = self.headers.get(name.lower())
        return None if values is None else ", ".join(values)


def address(base_url: str) -> tuple[str, int]:
    parts = urlsplit(base_url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def encode(target: str, *, method: str = "GET", headers: dict[str, str] | None = None, body: bytes = b"",
           hosts: tuple[str, ...] = ("localhost",)) -> bytes:
    """The request's bytes: ``target`` verbatim (latin-1 on the wire), one ``Host`` header line per entry of
    ``hosts`` (none for ``()``), ``Connection: close``, ``headers``, then ``body`` (with its length for a body or a
    ``POST``/``PUT``). For tests that read the answer themselves (a stream they leave mid-way)."""
    lines = [f"{method} {target} HTTP/1.1", *(f"Host: {host}" for host in hosts), "Connection: close"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    if body or method in ("POST", "PUT"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def request(base_url: str, target: str, *, method: str = "GET", headers: dict[str, str] | None = None,
            body: bytes = b"", hosts: tuple[str, ...] = ("localhost",)) -> RawResponse:
    """Send one request (:func:`encode`) and read the whole response."""
    with socket.create_connection(address(base_url), timeout=READ_TIMEOUT) as sock:
        sock.sendall(encode(target, method=method, headers=headers, body=body, hosts=hosts))
        data = bytearray()  # (bytes += would copy the whole response per read: quadratic in its size)
        while chunk := sock.recv(65536):
            data += chunk
    return parse(bytes(data))


def parse(data: bytes) -> RawResponse:
    """Split a whole HTTP/1.1 response into status, headers and body."""
    head, sep, wire_body = data.partition(b"\r\n\r\n")
    assert sep, f"no complete response head in {len(data)} bytes"
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers: dict[str, list[str]] = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers.setdefault(name.strip().lower(), []).append(value.strip())
    chunked = "chunked" in ",".join(headers.get("transfer-encoding", [])).lower()
    return RawResponse(int(status_line.split()[1]), headers, dechunk(wire_body) if chunked else wire_body,
                       wire_body)


def dechunk(data: bytes) -> bytes:
    """The payload of a chunked body (as far as it goes)."""
    out, pos = b"", 0
    while True:
        end = data.find(b"\r\n", pos)
        if end < 0:
            return out
        size = int(data[pos:end].split(b";")[0], 16)
        if size == 0:
            return out
        out += data[end + 2 : end + 2 + size]
        pos = end + 2 + size + 2
