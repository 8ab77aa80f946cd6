"""The demo server's static files: which file a request path may name, which bytes and headers answer it.

**Path rules (every path is attacker input).** The request target is taken raw (``request.raw_path``, before
aiohttp's or yarl's normalization), its query dropped, and split on ``/``. Each segment is percent-decoded exactly
once as strict UTF-8. The request is refused with a bare ``404`` (the same body as a missing file) when:

* the target is not origin-form (``/…``), or has an empty segment (``//etc/passwd``) other than a final one;
* a decoded segment is empty, ``.`` or ``..``, starts with ``.`` (hidden files), or contains ``/`` (``%2f``),
  ``\\`` or a control character (NUL included) — so ``..`` is refused in every encoding, ``%2e%2e`` included;
* the last segment names a precompressed sidecar (``.br``, ``.gz``): sidecars are never served by name;
* the **real path** (``os.path.realpath``, every symlink resolved) of the file, of a directory's
  ``index.html`` or of a sidecar is not inside the real path of the site directory (symlinks within the site
  are fine; symlinks out of it are refused);
* the result is not a regular file.

**Precompressed sidecars.** For a file ``F``: ``F.br`` when it exists (inside the site, regular) and
``Accept-Encoding`` allows ``br``, else ``F.gz`` when gzip is allowed, else ``F``. ``Content-Type`` is always
``F``'s (by the URL's suffix); ``Content-Encoding`` names the sidecar's coding; ``Vary: Accept-Encoding`` is sent
whenever a sidecar exists, whichever bytes are served. A coding is allowed when ``Accept-Encoding`` lists it (or
``*``) with a non-zero ``q``; ``x-gzip`` counts as ``gzip``.

**Caching.** A path whose directory part has a segment matching :data:`IMMUTABLE_SEGMENT` (a content-hashed
directory of the kit's build, ``runtime-3f2a9c0d1e4b5a6f``) is ``Cache-Control: public, max-age=31536000,
immutable``; every other file is ``no-cache``. Every answer carries a strong ``ETag`` (the served file's mtime,
size and coding: distinct per encoding) and ``Last-Modified``; ``If-None-Match`` (weak comparison, ``*``), or
when absent ``If-Modified-Since``, answers ``304`` with no body. ``HEAD`` answers the same headers as ``GET``
without the body. No ``Range`` support (every client here asks for whole files).
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
import stat
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import unquote_to_bytes

from aiohttp import web

#: A directory segment naming a content-hashed (hence never-changing) directory.
IMMUTABLE_SEGMENT: Final = re.compile(r"[A-Za-z0-9_.]+-[0-9a-f]{16}")
IMMUTABLE_CACHE: Final = "public, max-age=31536000, immutable"
REVALIDATE_CACHE: Final = "no-cache"

#: Sidecar suffix -> content coding, in order of preference.
SIDECARS: Final = ((".br", "br"), (".gz", "gzip"))

#: Bytes read per step while sending a file (each read runs in the default executor).
READ_CHUNK_BYTES: Final = 256 * 1024

#: Media types by suffix; anything else is ``application/octet-stream``. ``.mjs``/``.js`` must be JavaScript and
#: ``.wasm`` must be ``application/wasm`` (``WebAssembly.instantiateStreaming``) whatever the host's mimetypes say.
MIME_TYPES: Final[dict[str, str]] = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".wasm": "application/wasm",
    ".zip": "application/zip",
    ".whl": "application/zip",
    ".tar": "application/x-tar",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
    ".ts": "text/plain; charset=utf-8",
    ".py": "text/x-python; charset=utf-8",
}

_Q_VALUE: Final = re.compile(r"(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)")


def site_segments(raw_path: str) -> list[str] | None:
    """The decoded segments of a raw request target, or ``None`` when the path rules refuse it.

    A trailing ``/`` gives a final empty segment (the directory's ``index.html``).
    """
    path = raw_path.split("?", 1)[0]
    if not path.startswith("/"):
        return None
    raw_segments = path[1:].split("/")
    segments: list[str] = []
    for n, raw in enumerate(raw_segments):
        if raw == "" and n == len(raw_segments) - 1:
            segments.append("")
            break
        try:
            segment = unquote_to_bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            return None
        if not segment or segment.startswith(".") or any(c in "/\\" or c < " " or c == "\x7f" for c in segment):
            return None
        segments.append(segment)
    if segments[-1].lower().endswith(tuple(suffix for suffix, _ in SIDECARS)):
        return None
    return segments


def accepted_codings(accept_encoding: str) -> frozenset[str]:
    """The sidecar codings (``br``, ``gzip``) that an ``Accept-Encoding`` value allows (RFC 9110 §12.5.3)."""
    weights: dict[str, bool] = {}
    for item in accept_encoding.split(","):
        name, *params = (part.strip() for part in item.split(";"))
        name = name.lower()  # (an empty name, from ",," or a leading ";", is kept under "" and never read)
        allowed = True
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                allowed = bool(_Q_VALUE.fullmatch(value.strip())) and float(value) > 0
        weights["gzip" if name == "x-gzip" else name] = allowed
    return frozenset(c for _, c in SIDECARS if weights.get(c, weights.get("*", False)))


@dataclass(frozen=True)
class Chosen:
    """The bytes that answer a request: which file, its stat, its coding and the headers that describe it."""

    path: Path
    stat: os.stat_result
    coding: str | None
    media_type: str
    has_sidecar: bool
    immutable: bool

    @property
    def etag(self) -> str:
        return f"{self.stat.st_mtime_ns:x}-{self.stat.st_size:x}-{self.coding or 'identity'}"


class Site:
    """One site directory; :meth:`choose` applies the path and sidecar rules."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))

    def _inside(self, path: Path) -> tuple[Path, os.stat_result] | None:
        """The real path of ``path`` and its stat, when it is a regular file inside the site."""
        real = Path(os.path.realpath(path))
        if not real.is_relative_to(self.root):
            return None
        try:
            st = real.stat()
        except OSError:
            return None
        return (real, st) if stat.S_ISREG(st.st_mode) else None

    def choose(self, raw_path: str, accept_encoding: str) -> Chosen | None:
        """The file answering ``raw_path`` under ``accept_encoding``, or ``None`` (404)."""
        segments = site_segments(raw_path)
        if segments is None:
            return None
        *directories, name = segments
        candidate = self.root.joinpath(*directories, name)
        if name == "" or Path(os.path.realpath(candidate)).is_dir():
            candidate, name = candidate / "index.html", "index.html"
        found = self._inside(candidate)
        if found is None:
            return None
        real, st = found
        media_type = MIME_TYPES.get(Path(name).suffix.lower(), "application/octet-stream")
        immutable = any(IMMUTABLE_SEGMENT.fullmatch(d) for d in directories)
        allowed = accepted_codings(accept_encoding)
        sidecars = [(coding, self._inside(real.with_name(real.name + suffix))) for suffix, coding in SIDECARS]
        present = [(coding, hit) for coding, hit in sidecars if hit is not None]
        for coding, (path, side_st) in present:
            if coding in allowed:
                return Chosen(path, side_st, coding, media_type, True, immutable)
        return Chosen(real, st, None, media_type, bool(present), immutable)


def _not_modified(request: web.Request, chosen: Chosen) -> bool:
    """RFC 9110 §13.1.2 / §13.1.3: ``If-None-Match`` (weak comparison) first, else ``If-Modified-Since``."""
    etags = request.if_none_match
    if etags is not None:
        return any(tag.value in ("*", chosen.etag) for tag in etags)
    since = request.if_modified_since
    return since is not None and int(chosen.stat.st_mtime) <= since.timestamp()


def _headers(chosen: Chosen) -> dict[str, str]:
    headers = {"Cache-Control": IMMUTABLE_CACHE if chosen.immutable else REVALIDATE_CACHE}
    if chosen.has_sidecar:
        headers["Vary"] = "Accept-Encoding"
    return headers


async def _send(request: web.Request, chosen: Chosen) -> web.StreamResponse:
    """Answer with the chosen file's bytes (headers only for ``HEAD``)."""
    response = web.StreamResponse(headers={**_headers(chosen), "Content-Type": chosen.media_type})
    if chosen.coding is not None:
        response.headers["Content-Encoding"] = chosen.coding
    loop = asyncio.get_running_loop()
    with chosen.path.open("rb") as handle:
        st = os.fstat(handle.fileno())  # the file we send, even if it changed since it was chosen
        opened = Chosen(chosen.path, st, chosen.coding, chosen.media_type, chosen.has_sidecar, chosen.immutable)
        response.etag = opened.etag
        response.last_modified = st.st_mtime
        response.content_length = st.st_size
        await response.prepare(request)
        if request.method != "HEAD":
            await copy_exactly(functools.partial(loop.run_in_executor, None, handle.read), response.write,
                               st.st_size)
    await response.write_eof()
    return response


async def copy_exactly(read: Callable[[int], Awaitable[bytes]], write: Callable[[bytes], Awaitable[object]],
                       size: int, step: int = READ_CHUNK_BYTES) -> int:
    """Copy ``size`` bytes (the ``Content-Length`` already sent) from ``read`` to ``write``, asking for at most
    ``step`` at a time; returns the bytes copied. A file that grew since it was measured is cut at ``size``; one
    that shrank ends at its end (the client then sees a body shorter than announced: an error, not a success)."""
    left = size
    while left > 0:
        data = await read(min(step, left))
        if not data:
            break
        await write(data)
        left -= len(data)
    return size - left


def static_handler(root: Path) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The ``GET``/``HEAD`` handler serving the site under ``root`` by the rules above."""
    site = Site(root)

    async def handle(request: web.Request) -> web.StreamResponse:
        chosen = site.choose(request.raw_path, request.headers.get("Accept-Encoding", ""))
        if chosen is None:
            raise web.HTTPNotFound()
        if _not_modified(request, chosen):
            response = web.StreamResponse(status=304, headers=_headers(chosen))
            response.etag = chosen.etag
            response.last_modified = chosen.stat.st_mtime
            return response
        return await _send(request, chosen)

    return handle


def join_vary(current: str | None, tokens: Iterable[str]) -> str:
    """``current`` (a ``Vary`` value or ``None``) with ``tokens`` added once each."""
    values = [v.strip() for v in (current or "").split(",") if v.strip()]
    values += [t for t in tokens if t.lower() not in {v.lower() for v in values}]
    return ", ".join(values)
