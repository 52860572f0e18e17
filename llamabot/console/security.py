"""Who may use the console, and proof that a state-changing request came from its own page.

- **Loopback by default.** Without a token the console answers only requests whose ``Host`` is a loopback name
  (``127.0.0.1``, ``localhost``, ``[::1]``): a web page elsewhere cannot reach it through DNS rebinding.
  :func:`check_bind` refuses any other address unless a token is set.
- **Token.** With a token (``--token`` / ``$LLAMABOT_CONSOLE_TOKEN``) every request needs it: ``Authorization:
  Bearer <token>``, or the cookie set when a page is opened once with ``?token=<token>`` (the console then
  redirects to the same page without it, so the token does not stay in the address bar or history).
- **CSRF.** Every state change is a POST whose form carries ``csrf``, equal to the ``llamabot_csrf`` cookie
  (double submit; the cookie is ``SameSite=Strict`` and ``HttpOnly``), and whose ``Origin``, when sent, is the
  console's own. Another site can neither read the cookie nor send it.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

#: Sent with every response: no script but the console's own file, no framing (an approve button cannot be
#: clickjacked), no referrer to other sites (the first address may carry the token; a same-origin one keeps the
#: Origin header that the CSRF check reads: with no-referrer a browser sends "Origin: null").
HEADERS = (
    (b"content-security-policy", b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                                 b"img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
)
TOKEN_COOKIE = "llamabot_console"
CSRF_COOKIE = "llamabot_csrf"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


class ConsoleSecurityError(ValueError):
    """The console cannot start as asked (a non-loopback address without a token)."""


def is_loopback(host: str) -> bool:
    if host.strip("[]") in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """:class:`ConsoleSecurityError` when ``host`` is not a loopback address and no token is set."""
    if not is_loopback(host) and not token:
        raise ConsoleSecurityError(
            f"the console binds {host}, which other machines can reach: set a token (--token or "
            "$LLAMABOT_CONSOLE_TOKEN) that every request must carry, or bind 127.0.0.1"
        )


def same(a: str | None, b: str | None) -> bool:
    """Constant-time equality of two secrets (``False`` when either is missing)."""
    return bool(a) and bool(b) and hmac.compare_digest(a.encode(), b.encode())  # type: ignore[union-attr]


class Gate:
    """ASGI middleware: the host check, the token, a CSRF cookie for every page (``request.state.csrf``) and the
    :data:`HEADERS` on every response."""

    def __init__(self, app: ASGIApp, token: str | None):
        self.app, self.token = app, token or None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        csrf = request.cookies.get(CSRF_COOKIE)
        fresh = None if csrf else secrets.token_urlsafe(32)
        scope.setdefault("state", {})["csrf"] = csrf or fresh

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), *HEADERS]
                if fresh is not None:
                    headers.append((b"set-cookie", _cookie(CSRF_COOKIE, fresh).encode()))
                message = {**message, "headers": headers}
            await send(message)

        refused = self._refusal(request)
        await (refused or self.app)(scope, receive, send_with_headers)

    def _refusal(self, request: Request) -> Response | None:
        if self.token is None:
            host = urlsplit(f"//{request.headers.get('host', '')}").hostname or ""
            if not is_loopback(host):
                return PlainTextResponse("this console answers on 127.0.0.1 only (or start it with a token)", 421)
            return None
        given = request.query_params.get("token")
        if given is not None:
            if not same(given, self.token):
                return _unauthorized()
            query = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
            response = RedirectResponse(request.url.path + (f"?{query}" if query else ""), 303)
            response.headers.append("set-cookie", _cookie(TOKEN_COOKIE, self.token))
            return response
        auth = request.headers.get("authorization", "")
        bearer = auth[7:] if auth.lower().startswith("bearer ") else None
        if same(bearer, self.token) or same(request.cookies.get(TOKEN_COOKIE), self.token):
            return None
        return _unauthorized()


def _unauthorized() -> Response:
    return PlainTextResponse("this console needs its token: open it once with ?token=<token> (the value of --token "
                             "or $LLAMABOT_CONSOLE_TOKEN), or send Authorization: Bearer <token>", 401)


def _cookie(name: str, value: str) -> str:
    return f"{name}={value}; Path=/; HttpOnly; SameSite=Strict"


def check_csrf(request: Request, form: dict[str, str]) -> str | None:
    """Why a state-changing request is refused (its form's ``csrf`` does not match the cookie, or it comes from
    another origin), or ``None``."""
    if not same(form.get("csrf"), request.cookies.get(CSRF_COOKIE)):
        return "the form's CSRF token is missing or stale: reload the page and try again"
    origin = request.headers.get("origin")
    if origin and origin != "null" and urlsplit(origin).netloc != request.headers.get("host"):
        return f"a request from another origin ({origin}) is refused"
    if origin == "null":
        return "a request from an opaque origin is refused"
    return None
