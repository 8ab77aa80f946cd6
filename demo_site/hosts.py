"""Which ``Host`` a request may name: the demo server's defence against DNS rebinding.

A page on ``http://attacker.example:8000`` can make its own name resolve to ``127.0.0.1`` after it has loaded
(DNS rebinding). The browser then sends that page's requests to this server and treats the answers as
same-origin: the page could read the model routes' answers and, in proxy mode, spend the key. CORS does not help
(the browser sees no cross-origin request), but the browser still names the origin the page believes it talks to
in the ``Host`` header. So a request is answered only when that name is one the server is known by:

* an IP address literal (``127.0.0.1``, ``[::1]``, a LAN address): a rebinding page reaches the server only under
  a DNS *name*, so a literal address is never the attacker's;
* ``localhost``;
* the names given with ``--allow-host`` (for a server reached by a DNS name, e.g. behind a reverse proxy).

The port is not compared (a rebinding page already uses the server's port). Anything else, a ``Host`` that does
not parse, or a request with no ``Host`` or with two, is refused before any handler runs: ``421 Misdirected
Request`` for a name the server does not answer to, ``400`` for the rest. The refusal never repeats the value.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Final

#: Names answered besides IP literals and ``--allow-host`` names.
DEFAULT_NAMES: Final = frozenset({"localhost"})

# RFC 9110 §7.2 / RFC 3986 §3.2.2: ``host [ ":" port ]``, the host a bracketed IPv6 literal or a reg-name / IPv4.
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+(?:%25[0-9A-Za-z._~-]+)?\]|[0-9A-Za-z._~!$&'()*+,;=%-]+)(?::[0-9]{0,5})?")


def host_name(value: str) -> str | None:
    """The host part of a ``Host`` header value, lower-cased, without its port; ``None`` if it does not parse."""
    match = _HOST.fullmatch(value)
    return None if match is None else match[1].lower()


def is_ip_literal(name: str) -> bool:
    """Whether ``name`` (as :func:`host_name` returns it) is an IPv4 address or a bracketed IPv6 address."""
    if name.startswith("["):
        text = name[1:-1].replace("%25", "%", 1)
        try:
            return isinstance(ipaddress.ip_address(text), ipaddress.IPv6Address)
        except ValueError:
            return False
    try:
        return isinstance(ipaddress.ip_address(name), ipaddress.IPv4Address)
    except ValueError:
        return False


def parse_allowed_host(text: str) -> str:
    """A ``--allow-host`` value (a DNS name, no port), lower-cased; ``ValueError`` if it is not one."""
    name = host_name(text)
    if name is None or name != text.lower() or name.startswith("[") or "%" in name or not name.strip("."):
        raise ValueError("expected a host name without a port, e.g. demo.internal")
    return name


class HostPolicy:
    """The names this server answers to (see the module docstring)."""

    __slots__ = ("_names",)

    def __init__(self, allowed: Iterable[str] = ()) -> None:
        self._names = DEFAULT_NAMES | {parse_allowed_host(name) for name in allowed}

    def verdict(self, values: list[str]) -> int | None:
        """``None`` when a request with these ``Host`` header values may be answered, else the status to refuse
        it with: ``400`` (no ``Host``, two, or one that does not parse), ``421`` (a name not answered to)."""
        if len(values) != 1:
            return 400
        name = host_name(values[0].strip(" \t"))
        if name is None:
            return 400
        if name in self._names or is_ip_literal(name):
            return None
        return 421
