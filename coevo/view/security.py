"""Who may talk to `coevo view`: a Host allow-list and a same-origin rule for writes.

A page on any web site can make the browser of the person reading it send requests to
127.0.0.1: pointing its own name at this machine (DNS rebinding) it can then read the
replies, i.e. a run's texts; and any page can post a form at the viewer (labels). So, as
Jupyter does:

- every request must be addressed (its `Host` header) to a name the viewer answers to: the
  address it serves on, `localhost`, `127.0.0.1` and `[::1]` with its port, and the names
  `--allow-host` adds (NAME: any port, for a proxy; NAME:PORT: that port only);
- a request that changes something (POST, PUT, PATCH, DELETE) must come from the viewer's own
  pages: its `Origin` (without one, its `Referer`) names an allowed host (with no allow-list,
  the request's own Host); a request with neither header must carry the session token, which
  the viewer hands every page in a SameSite=Strict cookie (browsers never send that cookie
  from another site; a script sends it back, or its value in an `X-Coevo-Token` header).
  A present foreign Origin is refused even with the token.

Refusals are 403 with one paragraph saying why and how to allow it. `Guard` holds the
rules; `GuardMiddleware` applies them to every request (pages, static files, posts).
"""

from __future__ import annotations

import html
import ipaddress
import secrets
import socket
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

#: Methods that change something: they need the same-origin check.
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: The header a script may send the session token in.
TOKEN_HEADER = "x-coevo-token"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
_WILDCARDS = ("0.0.0.0", "[::]")


def split_host(value: str, default_port: int | None = None) -> tuple[str, int | None]:
    """(host, port) of `name`, `name:port`, `[v6]`, `[v6]:port` or a bare IPv6 address;
    the host lower-cased, without a trailing dot, IPv6 in brackets. ValueError if malformed."""
    text = value.strip().lower()
    port_text = ""
    if text.startswith("["):
        host, sep, rest = text.partition("]")
        host += sep
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"{value!r} is not a host name")
        port_text = rest[1:]
    elif text.count(":") > 1:  # a bare IPv6 address, as --host takes it
        host = f"[{text}]"
    else:
        host, _, port_text = text.partition(":")
    host = host.rstrip(".")
    if not host or any(c in host for c in "/@?#\\ \t*,") or (port_text and not port_text.isdigit()):
        raise ValueError(f"{value!r} is not a host name")
    if port_text and not 0 < int(port_text) < 65536:
        raise ValueError(f"{value!r}: the port must be 1-65535")
    return host, int(port_text) if port_text else default_port


def check_allow_host(value: str) -> str:
    """An `--allow-host` value as given, if usable; else ValueError saying what one looks like."""
    try:
        split_host(value)
    except ValueError:
        raise ValueError(f"--allow-host takes a host name as a browser's address bar has it, with an optional "
                         f"port (e.g. myhost, myhost.example.org:8000, [fe80::1]:8000), not {value!r}") from None
    return value.strip()


def is_loopback(host: str) -> bool:
    """Whether `host` (as --host takes it) reaches this machine only: localhost, 127.0.0.0/8, ::1."""
    name = host.strip().strip("[]").lower().rstrip(".")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def exposure_warning(host: str) -> str | None:
    """The warning `coevo view --host ADDRESS` prints for an address others can reach (None
    for a loopback one)."""
    if is_loopback(host):
        return None
    return (f"warning: --host {host} is not this machine alone: the runs' texts and their annotation labels are "
            "open to anyone on the network who can reach that address (there is no login). Browsers must use "
            "the address served on or a name given with --allow-host NAME.")


def served_hosts(host: str, port: int, extra: Iterable[str] = ()) -> list[str]:
    """The allow-list of a viewer serving on host:port: that address, the loopback names with
    its port, the `extra` names (--allow-host) and, bound to every interface (0.0.0.0, ::),
    this machine's name and the addresses it resolves to (best effort)."""
    served, _ = split_host(host)
    names = [served, *LOOPBACK_NAMES]
    if served in _WILDCARDS:
        names += _machine_names()
    allowed = list(dict.fromkeys(f"{name}:{port}" for name in names))
    return allowed + [check_allow_host(name) for name in extra]


def _machine_names() -> list[str]:
    try:
        name = socket.gethostname()
        _, aliases, addresses = socket.gethostbyname_ex(name)
        return [name.lower(), socket.getfqdn().lower(), *(a.lower() for a in aliases), *addresses]
    except OSError:  # no resolvable name: the user adds it with --allow-host
        return []


class Guard:
    """The rules of one viewer: its allow-list (None: any Host; the origin check then compares
    with the request's own Host) and its session token, drawn at random when the app starts."""

    def __init__(self, allowed_hosts: Sequence[str] | None = None):
        self.allowed = None if allowed_hosts is None else [split_host(h) for h in allowed_hosts]
        self.token = secrets.token_urlsafe(24)
        # Cookies are not kept apart by port: each viewer's cookie has its own name.
        self.cookie = f"coevo_view_{secrets.token_hex(4)}"

    def host_allowed(self, host_header: str | None) -> bool:
        """Whether a request addressed to `host_header` is served."""
        if self.allowed is None:
            return True
        if not host_header:
            return False
        try:
            return self._listed(*split_host(host_header, default_port=80))
        except ValueError:
            return False

    def _listed(self, host: str, port: int | None) -> bool:
        return any(host == name and (wanted is None or port == wanted) for name, wanted in self.allowed or [])

    def origin_allowed(self, origin: str, host_header: str | None) -> bool:
        """Whether `origin` (an Origin or Referer url) is the viewer itself."""
        parts = urlsplit(origin.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc or "@" in parts.netloc:
            return False
        try:
            source = split_host(parts.netloc, 443 if parts.scheme == "https" else 80)
            if self.allowed is not None:
                return self._listed(*source)
            return source == split_host(host_header or "", 80)
        except ValueError:
            return False

    def refusal(self, method: str, headers: dict[str, str]) -> str | None:
        """Why a request is refused (one paragraph, plain text), or None when it is served."""
        host = headers.get("host")
        if not self.host_allowed(host):
            return self._foreign_host(host)
        if method not in UNSAFE_METHODS:
            return None
        source = headers.get("origin") or headers.get("referer")
        if source:
            if self.origin_allowed(source, host):
                return None
            return (f"coevo view refused this {method}: it came from a page at {source}, not from the viewer's own "
                    "pages. Another web site must not change a run (post labels) through your browser. Use the "
                    "viewer's own page; if you reach the viewer through another name, add it with --allow-host NAME.")
        if self.token_in(headers):
            return None
        return (f"coevo view refused this {method}: it names no origin (no Origin or Referer header) and carries no "
                "session token, so it cannot be told from a request another web site made. Post from the viewer's "
                f"own page, or from a script send back the {self.cookie} cookie a page of the viewer set (or its "
                "value in an X-Coevo-Token header).")

    def token_in(self, headers: dict[str, str]) -> bool:
        """Whether the request carries this viewer's session token (header or cookie)."""
        from http.cookies import CookieError, SimpleCookie

        given = headers.get(TOKEN_HEADER, "")
        if not given:
            try:
                jar = SimpleCookie(headers.get("cookie", ""))
            except CookieError:
                return False
            given = jar[self.cookie].value if self.cookie in jar else ""
        return bool(given) and secrets.compare_digest(given.encode(), self.token.encode())

    def _foreign_host(self, host: str | None) -> str:
        try:
            name = split_host(host or "")[0]
        except ValueError:
            name = "NAME"
        # The allowed names are not listed: a page that rebound its name here would read them.
        return (f"coevo view refused this request: it is addressed to {host or 'no host'!r}, and this viewer answers "
                "only the address it serves on, localhost, 127.0.0.1 and [::1] with its port, and the names given "
                "with --allow-host. Another web site can point its own name at this "
                "machine (DNS rebinding) to read the runs through your browser, so other names are refused. If you "
                f"reach the viewer through this name on purpose (a proxy, a tunnel, the machine's name on your "
                f"network), start it again with --allow-host {name}.")

    def set_cookie_header(self) -> bytes:
        """The Set-Cookie value that hands a browser the session token."""
        return f"{self.cookie}={self.token}; Path=/; SameSite=Strict; HttpOnly".encode("latin-1")


class GuardMiddleware:
    """ASGI middleware: `guard`'s refusals as 403 pages (HTML for a browser, text otherwise);
    every response to a request without the session cookie sets it."""

    def __init__(self, app, guard: Guard):
        self.app = app
        self.guard = guard

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        why = self.guard.refusal(scope["method"].upper(), headers)
        if why is not None:
            await _send_refusal(send, why, "text/html" in headers.get("accept", ""))
            return
        if f"{self.guard.cookie}={self.guard.token}" in headers.get("cookie", ""):
            await self.app(scope, receive, send)
            return

        async def with_cookie(message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"set-cookie", self.guard.set_cookie_header())]}
            await send(message)

        await self.app(scope, receive, with_cookie)


async def _send_refusal(send, why: str, as_html: bool) -> None:
    if as_html:
        body = ("<!doctype html><html><head><meta charset=\"utf-8\"><title>403 Forbidden - coevo view</title></head>"
                f"<body><h1>Forbidden</h1><p>{html.escape(why)}</p></body></html>\n").encode()
        kind = b"text/html; charset=utf-8"
    else:
        body, kind = (why + "\n").encode(), b"text/plain; charset=utf-8"
    await send({"type": "http.response.start", "status": 403,
                "headers": [(b"content-type", kind), (b"content-length", str(len(body)).encode()),
                            (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": body})
