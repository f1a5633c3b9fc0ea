"""Keeping a credential out of everything the course prints or writes.

Two jobs, one module:

  * ``redact(text, key)``: the API key out of text a server sent -- an error message, a
    malformed answer shown as an excerpt, the completion of a reply that echoes the key.
    A server (or a model asked to) may send the key back in another form than it received
    it, so "every occurrence of the exact key" is not enough. The rule:

      - letter case is ignored (``GSK_ABC...`` is the key ``gsk_abc...`` upper-cased);
      - whitespace and invisible characters between the key's characters are ignored (the
        key broken over two lines, spaced out, or with zero-width spaces in it);
      - any piece holding at least half of the key's characters (and at least
        ``MIN_SECRET_CHARS``) is the key: a key split in two, each half shown somewhere
        else, or its first 30 characters before a cut, would still give half of it away.

    Each such stretch (separators inside it included) becomes ``[redacted]``.

    A key shorter than ``MIN_SECRET_CHARS`` is not redacted at all (``redactable``): replacing
    every ``e`` of a message because the key is ``e`` blanks out ordinary text and protects
    nothing (a one-letter key is no secret). Real provider keys are 40 characters and more;
    the short ones are the placeholders local servers accept (``EMPTY``, ``ollama``). The
    tool says so on stderr when it meets one.

  * ``is_credential_arg(name, value)`` and ``without_url_credentials(text)``: what of a
    model's recorded arguments (lm-eval's ``model_args``) must not be copied into a policy
    name. A credential is not part of which model answered.

>>> redact("bad key: GSK_ABCDEF123456 (sent gsk_abc\\ndef123456)", "gsk_abcdef123456")
'bad key: [redacted] (sent [redacted])'
>>> redact("first half gsk_abcd, second half ef123456; a third: abc1", "gsk_abcdef123456")
'first half [redacted], second half [redacted]; a third: abc1'
>>> redact("model not found", "e")
'model not found'
"""

from __future__ import annotations

import bisect
import re
from typing import Any

MIN_SECRET_CHARS = 8
REDACTED = "[redacted]"

# Characters a key never holds (check_api_key refuses them) but a server may put between its
# characters: whitespace and the invisible formatting characters (soft hyphen, zero-width
# space and joiners, bidi marks, word joiner, BOM).
_SEPARATORS = re.compile("[\\s\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]+")
# Case folding that keeps every position: only ASCII letters change (a key is printable ASCII),
# so positions in the folded text are positions in the original.
_ASCII_FOLD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def redactable(secret: str | None) -> bool:
    """Is ``secret`` long enough to be redacted without blanking ordinary text?"""
    return bool(secret) and len(secret) >= MIN_SECRET_CHARS  # type: ignore[arg-type]


def piece_chars(secret: str) -> int:
    """The shortest run of the key's characters that counts as the key: half of it, at least 8."""
    return max(MIN_SECRET_CHARS, -(-len(secret) // 2))


def key_spans(text: str, secret: str | None) -> list[tuple[int, int]]:
    """``(start, end)`` of every stretch of ``text`` that gives the key away (see the module's rule)."""
    if not redactable(secret) or not text:
        return []
    key = secret.translate(_ASCII_FOLD)  # type: ignore[union-attr]
    width = piece_chars(key)
    folded = text.translate(_ASCII_FOLD)
    # Squeeze the separators out, remembering where each kept piece starts in both texts.
    squeezed_at, original_at, pieces = [0], [0], []
    position = 0
    for gap in _SEPARATORS.finditer(folded):
        pieces.append(folded[position:gap.start()])
        position = gap.end()
        squeezed_at.append(squeezed_at[-1] + len(pieces[-1]))
        original_at.append(position)
    pieces.append(folded[position:])
    squeezed = "".join(pieces)
    # Every occurrence of every window of `width` key characters; overlapping windows cover a longer piece.
    hits: list[tuple[int, int]] = []
    for gram in {key[i:i + width] for i in range(len(key) - width + 1)}:
        at = squeezed.find(gram)
        while at != -1:
            hits.append((at, at + width))
            at = squeezed.find(gram, at + 1)
    if not hits:
        return []
    hits.sort()
    merged = [list(hits[0])]
    for start, end in hits[1:]:
        if start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])

    def original(index: int) -> int:
        piece = bisect.bisect_right(squeezed_at, index) - 1
        return original_at[piece] + index - squeezed_at[piece]

    return [(original(start), original(end - 1) + 1) for start, end in merged]


def redact(text: str, secret: str | None) -> str:
    """``text`` with every stretch that gives the key away replaced by ``[redacted]``.

    >>> redact("bad key gsk_abc123XYZ given", "gsk_abc123XYZ")
    'bad key [redacted] given'
    """
    spans = key_spans(text, secret)
    if not spans:
        return text
    out, position = [], 0
    for start, end in spans:
        out += [text[position:start], REDACTED]
        position = end
    out.append(text[position:])
    return "".join(out)


# ---------------------------------------------------------------------------
# Credentials among a model's recorded arguments
# ---------------------------------------------------------------------------
_CREDENTIAL_NAMES = frozenset({
    "token", "key", "apikey", "api_key", "secret", "password", "passwd", "auth", "authorization", "bearer",
    "credential", "credentials", "access_token", "api_token", "auth_token", "hf_token", "secret_key",
    "private_key", "client_secret", "openai_api_key",
})
_CREDENTIAL_SUFFIXES = ("_token", "_key", "_secret", "_password", "_passwd", "_credential", "_credentials")
_NOT_A_SECRET = re.compile(r"(?i)(?:true|false|none|null|[-+0-9.e]*)")
_BEARER = re.compile(r"(?i)\bbearer\s+\S")


def is_credential_arg(name: Any, value: Any) -> bool:
    """Is ``name=value`` a credential (``token=hf_...``, ``api_key=sk-...``)?

    Judged by the name, then the value: ``add_bos_token=True`` has a credential-like name but a
    flag for a value, and a flag or a number is never a secret.

    >>> is_credential_arg("token", "hf_abc"), is_credential_arg("add_bos_token", "True"), is_credential_arg("tokenizer", "x")
    (True, False, False)
    """
    if isinstance(value, str) and _BEARER.search(value):  # "Authorization: Bearer sk-...", whatever the name
        return True
    lowered = str(name).strip().lower().replace("-", "_")
    if lowered not in _CREDENTIAL_NAMES and not lowered.endswith(_CREDENTIAL_SUFFIXES):
        return False
    if value is None or isinstance(value, (bool, int, float)):
        return False
    return not _NOT_A_SECRET.fullmatch(str(value).strip())


_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]*@")
# A URL up to whitespace or a comma (lm-eval's model_args are comma-separated name=value pairs).
_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s,]*")


def _url_without_credentials(url: str) -> str:
    url = _URL_USERINFO.sub(r"\1", url)
    base, mark, query = url.partition("?")
    if not mark:
        return url
    query, hash_mark, fragment = query.partition("#")
    kept = [p for p in query.split("&") if not (("=" in p) and is_credential_arg(*p.split("=", 1)))]
    return base + ("?" + "&".join(kept) if kept else "") + hash_mark + fragment


def without_url_credentials(text: str) -> str:
    """Every URL in ``text`` without its credentials: ``scheme://user:password@host`` -> ``scheme://host``,
    and a query parameter that is one (``?api-key=...``, Azure's way; judged by ``is_credential_arg``) left out.

    >>> without_url_credentials("base_url=http://me:s3cret@127.0.0.1:8000/v1")
    'base_url=http://127.0.0.1:8000/v1'
    >>> without_url_credentials("base_url=https://h/v1?api-key=sk-abc&api-version=2024-06-01")
    'base_url=https://h/v1?api-version=2024-06-01'
    """
    return _URL.sub(lambda m: _url_without_credentials(m.group()), text)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.bridges.redaction"))
