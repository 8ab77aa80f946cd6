"""Cross-origin access to the demo server (``--allow-origin ORIGIN``, repeatable).

Only two kinds of response are ever shared with another origin: the **model routes** (embedded or proxied; their
``OPTIONS`` preflight included) and ``GET``/``HEAD`` of the **kit** under ``/webclient/``. The demo page, the
demo JSON, the stats and every other static file are same-origin only.

For a request whose ``Origin`` is exactly one of the configured origins (``scheme://host[:port]``, lower-case, no
path, no wildcard), a shareable response gets ``Access-Control-Allow-Origin: <that origin>`` and, on the model
routes, ``Access-Control-Expose-Headers`` for the request-id and ``Retry-After`` headers a client reports. Every
shareable response carries ``Vary: Origin`` once origins are configured (a cache must not hand one origin's answer
to another). ``Access-Control-Allow-Credentials`` is never sent: nothing here uses cookies or HTTP auth, and the
proxy's key never comes from the page.

A preflight (``OPTIONS`` on a model route) from a listed origin asking for the route's method (``POST``; ``GET``
on the Responses resume route) answers ``204`` with that method, the allowed request headers and a max-age; any
other preflight answers ``403`` without CORS headers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from aiohttp import web

from demo_site.static_files import join_vary

#: Request headers a cross-origin page may send to a model route.
ALLOWED_REQUEST_HEADERS: Final = ("content-type", "x-demo-scenario", "anthropic-version", "anthropic-beta",
                                  "openai-beta", "last-event-id")
#: Response headers of a model route a cross-origin page may read.
EXPOSED_HEADERS: Final = ("x-request-id", "request-id", "retry-after")
#: Seconds a browser may cache a preflight answer (Chromium caps it at 7200).
PREFLIGHT_MAX_AGE: Final = 600
#: The path prefix of the kit.
KIT_PREFIX: Final = "/webclient/"

_ORIGIN: Final = re.compile(
    r"https?://(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*"
    r"|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?")


def parse_origin(text: str) -> str:
    """An ``--allow-origin`` value, checked: ``scheme://host[:port]`` exactly as browsers serialize it.

    Raises ``ValueError`` for anything else (a wildcard, ``null``, a path or a trailing ``/``, upper case).
    """
    if not _ORIGIN.fullmatch(text):
        raise ValueError("an origin is scheme://host[:port] in lower case, without path or wildcard")
    return text


class CorsPolicy:
    """The configured origins and the rules above; :meth:`decorate` runs for every response."""

    def __init__(self, origins: Iterable[str] = ()) -> None:
        self.origins = frozenset(parse_origin(o) for o in origins)

    def _allowed(self, request: web.Request) -> str | None:
        origin = request.headers.get("Origin")
        return origin if origin in self.origins else None

    def decorate(self, request: web.Request, response: web.StreamResponse, *, model_route: bool) -> None:
        """Add the CORS response headers ``request`` is entitled to (none unless it is shareable)."""
        kit = request.method in ("GET", "HEAD") and request.raw_path.startswith(KIT_PREFIX)
        if not self.origins or not (model_route or kit):
            return
        response.headers["Vary"] = join_vary(response.headers.get("Vary"), ["Origin"])
        origin = self._allowed(request)
        if origin is None:
            return
        response.headers["Access-Control-Allow-Origin"] = origin
        if model_route:
            response.headers["Access-Control-Expose-Headers"] = ", ".join(EXPOSED_HEADERS)

    async def preflight(self, request: web.Request, method: str = "POST") -> web.Response:
        """``OPTIONS`` on a model route whose one method is ``method``."""
        wanted = request.headers.get("Access-Control-Request-Method", "")
        if self._allowed(request) is None or wanted != method:
            return web.Response(status=403)
        return web.Response(status=204, headers={
            "Access-Control-Allow-Methods": method,
            "Access-Control-Allow-Headers": ", ".join(ALLOWED_REQUEST_HEADERS),
            "Access-Control-Max-Age": str(PREFLIGHT_MAX_AGE),
        })
