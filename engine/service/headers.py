"""Ids of any script in HTTP headers.

HTTP header values are bytes; only ASCII travels everywhere unchanged (Starlette, h11 and most
clients treat other bytes as Latin-1, so a UTF-8 `ü` arrives as `Ã¼`). kioku's rule:

- **kioku answers** with ids percent-encoded as UTF-8 (RFC 3986, the encoding of RFC 8187's
  `ext-value` without its `UTF-8''` prefix): `小月` -> `%E5%B0%8F%E6%9C%88`. An ASCII id is sent as
  it is (letters, digits, `_`, `-` and `.` are never escaped).
- **kioku accepts** in a request header: that percent-encoding, the full RFC 8187 form
  `UTF-8''%E5%B0%8F%E6%9C%88`, or the raw UTF-8 bytes. Anything else (bytes that are not UTF-8, a
  broken escape) is refused with 400 naming the header, never guessed.

This is unambiguous because a valid id never contains `%` or `'` (see `engine.paths.validate_id`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import quote, unquote_to_bytes

from engine.service.errors import ServiceError

_RFC8187 = re.compile(r"^utf-8'[A-Za-z0-9\-]*'", re.IGNORECASE)
_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def encode_header_value(text: str) -> str:
    """`text` as an ASCII header value: UTF-8, percent-encoded; ASCII ids come out unchanged."""
    return quote(text, safe="")


def decode_header_value(raw: bytes, *, name: str) -> str:
    """The text of a request header sent in any of the accepted forms (see the module docstring)."""
    if not raw.isascii():
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _refuse(name, "its bytes are not UTF-8") from None
    text = raw.decode("ascii")
    prefix = _RFC8187.match(text)
    if prefix:
        text = text[prefix.end():]
    elif "%" not in text:
        return text
    if _ESCAPE.search(text):
        raise _refuse(name, "it has a '%' that does not start a %XX escape")
    try:
        return unquote_to_bytes(text).decode("utf-8")
    except UnicodeDecodeError:
        raise _refuse(name, "its percent-escapes do not decode as UTF-8") from None


def header_text(scope_headers: Iterable[tuple[bytes, bytes]], name: str) -> str | None:
    """The decoded, stripped value of request header `name` (case-insensitive) from the raw ASGI
    headers, or None when it is absent or blank. Starlette's `request.headers` would have decoded
    the bytes as Latin-1 already; this reads them before that happens."""
    wanted = name.lower().encode("ascii")
    for key, value in scope_headers:
        if key == wanted:
            text = decode_header_value(value, name=name).strip()
            return text or None
    return None


def _refuse(name: str, why: str) -> ServiceError:
    return ServiceError(
        400, f"header {name} cannot be read: {why}. Send ids of any script as UTF-8, percent-encoded "
        "(e.g. 小月 as %E5%B0%8F%E6%9C%88), as RFC 8187 UTF-8''%E5%B0%8F%E6%9C%88, or as raw UTF-8 bytes",
        code="bad_header",
    )
