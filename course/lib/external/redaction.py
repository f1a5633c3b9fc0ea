"""Keeping a credential out of everything the course prints or writes.

Two jobs, one module:

  * ``redact(text, key)``: the API key out of text a server sent -- an error message, a
    malformed answer shown as an excerpt, the completion of a reply that echoes the key.
    A server (or a model asked to) may send the key back in another form than it received
    it, so "every occurrence of the exact key" is not enough. The rule:

      - letter case is ignored (``GSK_ABC...`` is the key ``gsk_abc...`` upper-cased);
      - the text is normalised first (``fold``: NFKC, combining marks stripped, the Cyrillic and
        Greek letters drawn like ASCII ones mapped to them): the key in fullwidth letters
        (``ｇｓｋ_...``), in mathematical or circled letters, or with an accent on every character
        is the key;
      - whitespace, control and invisible characters between the key's characters are ignored
        (the key broken over two lines, spaced out, or with zero-width spaces in it), and so is
        punctuation the key does not hold (``s.k.-.p.r.o.j``);
      - any piece holding at least half of the key's characters (and at least
        ``MIN_SECRET_CHARS``) is the key: a key split in two, each half shown somewhere
        else, or its first 30 characters before a cut, would still give half of it away.

    Each such stretch (separators inside it included) becomes ``[redacted]``.

    A key shorter than ``MIN_SECRET_CHARS`` is not redacted at all (``redactable``): replacing
    every ``e`` of a message because the key is ``e`` blanks out ordinary text and protects
    nothing (a one-letter key is no secret). Real provider keys are 40 characters and more;
    the short ones are the placeholders local servers accept (``EMPTY``, ``ollama``). The
    tool says so on stderr when it meets one.

  * ``public_settings(value)``, ``public_args_text(text)`` (built on ``is_credential_arg``
    and ``without_url_credentials``): what of a source's recorded settings (an inspect log's
    generate config, lm-eval's ``model_args``) must not be copied into a policy name or a
    ``sampling`` object, and so into every line, manifest and summary made from them. A
    credential is not part of which model answered nor of how it sampled. Left out: request
    headers and cookies whatever they hold, the strings and objects of a request-body extra
    (``extra_body``; its numbers and flags are sampling settings and stay), an argument whose
    name says credential (``token``, ``authtoken``, ``api_key_2``, ``pwd``...) unless its value
    is a flag or empty -- a number is no exemption (``token=12345678901234``) -- and any value
    shaped like one whatever its name (``Bearer ...``, ``sk-...``, ``hf_...``), nested arguments
    (``headers={...}``, a JSON text) checked inside. The same rule judges a URL's query (``sig``,
    ``signature``, ``code``, ``token``, ``key`` and every credential name; a URL's user:password
    and its fragment go whole) and a pair list (``[["X-Secret", "..."]]``: judged by its first
    element), wherever the URL or the pair sits: one rule for every name and setting recorded.

>>> redact("bad key: GSK_ABCDEF123456 (sent gsk_abc\\ndef123456)", "gsk_abcdef123456")
'bad key: [redacted] (sent [redacted])'
>>> redact("first half gsk_abcd, second half ef123456; a third: abc1", "gsk_abcdef123456")
'first half [redacted], second half [redacted]; a third: abc1'
>>> redact("model not found", "e")
'model not found'
"""

from __future__ import annotations

import ast
import functools
import json
import re
import unicodedata
import urllib.parse
from typing import Any

MIN_SECRET_CHARS = 8
REDACTED = "[redacted]"

# Letters of other scripts that are drawn like an ASCII letter of a key (lower case, as they are
# met after folding): an echo spelled with them reads as the key. NFKC does not map them (they
# are different letters, not compatibility forms), so they are listed.
_LOOKALIKES = str.maketrans({
    "\u0430": "a", "\u0432": "b", "\u0435": "e", "\u043a": "k", "\u043c": "m", "\u043d": "h", "\u043e": "o",
    "\u0440": "p", "\u0441": "c", "\u0442": "t", "\u0443": "y", "\u0445": "x", "\u0456": "i", "\u0458": "j",
    "\u0455": "s", "\u0501": "d", "\u051b": "q", "\u051d": "w", "\u04bb": "h", "\u04cf": "l",
    "\u03b1": "a", "\u03b9": "i", "\u03ba": "k", "\u03bd": "v", "\u03bf": "o", "\u03c1": "p", "\u03c4": "t",
    "\u03c5": "u", "\u03c7": "x",
})


@functools.lru_cache(maxsize=8192)
def _fold_char(char: str) -> str:
    """What one character of a text counts as when looking for the key: "" (nothing) or a few
    lower-case characters.

    A server or a model may send the key back in another form than it received it. Folded away:
    letter case; compatibility forms (NFKC's rule: fullwidth ``ｓｋ``, mathematical ``𝐬𝐤``, circled
    ``ⓢ``, ligatures ``ﬁ``); accents and other combining marks (``s\u0301k``); whitespace, control
    and invisible formatting characters (zero-width space, soft hyphen, bidi marks) between the
    key's characters; the Cyrillic and Greek letters drawn like ASCII ones. Character by
    character, so every folded character knows the original one it came from.
    """
    if char.isascii():
        return char.lower() if char.isprintable() and not char.isspace() else ""
    out = []
    for part in unicodedata.normalize("NFKD", char.lower()):
        if unicodedata.category(part)[0] in "MZC":  # combining marks, separators, controls and formats
            continue
        out.append(part.lower())
    return unicodedata.normalize("NFKC", "".join(out)).translate(_LOOKALIKES)


def fold(text: str) -> tuple[str, list[int]]:
    """``text`` folded for matching (``_fold_char``) and, for each folded character, the index of
    the character of ``text`` it came from.

    >>> fold("ＳＫ-a\u0301 b")
    ('sk-ab', [0, 1, 2, 3, 6])
    """
    pieces = list(map(_fold_char, text))
    return "".join(pieces), [i for i, piece in enumerate(pieces) for _ in piece]


def redactable(secret: str | None) -> bool:
    """Is ``secret`` long enough to be redacted without blanking ordinary text?"""
    return bool(secret) and len(secret) >= MIN_SECRET_CHARS  # type: ignore[arg-type]  # bool(None) is False


def piece_chars(secret: str) -> int:
    """The shortest run of the key's characters that counts as the key: half of it, at least 8."""
    return max(MIN_SECRET_CHARS, -(-len(secret) // 2))


def key_spans(text: str, secret: str | None) -> list[tuple[int, int]]:
    """``(start, end)`` of every stretch of ``text`` that gives the key away (see the module's rule)."""
    if not redactable(secret) or not text:
        return []
    # redactable(None) is False, so secret is a str here
    key, _ = fold(secret)  # type: ignore[arg-type]
    width = min(piece_chars(secret), len(key))  # type: ignore[arg-type]  # a str, as above
    if width < MIN_SECRET_CHARS:
        return []
    folded, origin = fold(text)
    # Punctuation the key does not hold is a separator too ("s.k.-.p.r.o.j" spells "sk-proj").
    foreign = {c for c in set(folded) if not c.isalnum() and c not in key}
    if foreign:
        kept = [i for i, c in enumerate(folded) if c not in foreign]
        folded, origin = "".join(folded[i] for i in kept), [origin[i] for i in kept]
    # Every occurrence of every window of `width` key characters; overlapping windows cover a longer piece.
    hits: list[tuple[int, int]] = []
    for gram in {key[i:i + width] for i in range(len(key) - width + 1)}:
        at = folded.find(gram)
        while at != -1:
            hits.append((at, at + width))
            at = folded.find(gram, at + 1)
    if not hits:
        return []
    hits.sort()
    merged = [list(hits[0])]
    for start, end in hits[1:]:
        if start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(origin[start], origin[end - 1] + 1) for start, end in merged]


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
# A name is split into words ("X-Api-Key" -> x, api, key; "authToken" -> auth, token); a credential's
# name has one of these words, or one of the joined forms below anywhere ("authtoken", "xapikey").
_SECRET_WORDS = frozenset({
    "secret", "secrets", "password", "passwd", "pwd", "pw", "passphrase", "credential", "credentials", "auth",
    "authorization", "authentication", "bearer", "cookie", "cookies", "header", "headers", "session", "apikey",
    "jwt", "sas", "signature", "private", "oauth",
})
_SECRET_JOINED = ("apikey", "authtoken", "accesstoken", "apitoken", "idtoken", "refreshtoken", "bearer", "secret",
                  "password", "passwd", "credential", "cookie", "authoriz", "header", "privatekey", "sessionid",
                  "xauth", "oauth")
# "token" and "key" as the last word are credentials (``hf_token``, ``api_key_2``), except where the word
# before names a token of the vocabulary (``add_bos_token``, ``think_end_token``), which is no secret.
_LAST_WORDS = frozenset({"token", "key", "pass", "pat"})
# Names that are a credential when they are the whole name: the signature of an Azure SAS URL
# (``?sv=...&sig=...``), the function key of an Azure Functions URL (``?code=...``). As one word of a
# longer name they say nothing (``trust_remote_code``, ``sig_figs``).
_BARE_NAMES = frozenset({"sig", "code", "signature", "token", "key"})
_VOCABULARY_ROLES = frozenset({"bos", "eos", "pad", "unk", "sep", "cls", "mask", "end", "start", "stop", "begin",
                               "prefix", "suffix", "think", "special", "chat", "image", "audio", "vision"})
# Containers of extra HTTP fields an SDK sends along (inspect's GenerateConfig.extra_body, OpenAI's
# extra_query): of these only numbers and flags under names that are no credential are kept
# (vLLM's top_k, min_p...: sampling settings); a string or an object in them may carry anything.
_BODY_NAMES = frozenset({"extra_body", "extra_query", "extra_json", "body", "json_body", "query_params"})
_NOT_A_SECRET = frozenset({"", "true", "false", "none", "null"})
# Values that are a credential whatever they are called: an Authorization header's value, the
# prefixes providers give their keys, a JSON Web Token.
_SECRET_VALUE = re.compile(
    r"(?i:\b(?:bearer|basic|digest|token)\s+[a-z0-9._~+/=-]{6,})"
    r"|(?<![A-Za-z0-9])(?:sk|pk|rk|hf|gsk|ghp|gho|ghu|ghs|ghr|github_pat|xox[abpr]|glpat|nvapi|r8|sk-ant|sk-proj)[-_][A-Za-z0-9_-]{8,}"
    r"|\bAKIA[0-9A-Z]{16}\b|\bAIza[0-9A-Za-z_-]{30,}|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    # A random-looking run: 24 letters and digits or more, upper case, lower case and digits mixed, no
    # separator (a model's name has words between dashes or dots; a sha is lower-case hex).
    r"|(?<![A-Za-z0-9])(?=[A-Za-z0-9]*[a-z])(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{24,}(?![A-Za-z0-9])"
)
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def name_words(name: Any) -> list[str]:
    """The words of an argument's name, lower case (``"X-Api-Key"`` -> ``["x", "api", "key"]``).

    >>> name_words("authToken"), name_words("api_key_2"), name_words("HTTPHeaders")
    (['auth', 'token'], ['api', 'key', '2'], ['http', 'headers'])
    """
    return [w.lower() for w in _WORD.findall(unicodedata.normalize("NFKC", str(name)))]


def is_credential_name(name: Any) -> bool:
    """Does ``name`` say its value is a credential, a header or a cookie?

    >>> [is_credential_name(n)
    ...  for n in ("token", "authtoken", "api_key_2", "pwd", "cookie", "add_bos_token", "max_tokens")]
    [True, True, True, True, True, False, False]
    """
    words = name_words(name)
    joined = "".join(words)
    if any(w in _SECRET_WORDS for w in words) or any(j in joined for j in _SECRET_JOINED):
        return True
    named = [w for w in words if not w.isdigit()]  # api_key_2 is still an api key
    if "".join(named) in _BARE_NAMES:
        return True
    if named and named[-1] in _LAST_WORDS:
        return not (len(named) > 1 and named[-2] in _VOCABULARY_ROLES)
    return False


def is_secret_value(value: Any) -> bool:
    """Is ``value`` (or any string inside it) shaped like a credential, whatever it is called?

    >>> (is_secret_value("Authorization: Bearer abc123xyz"), is_secret_value("sk-proj-abcdefgh12"),
    ...  is_secret_value("0.7"))
    (True, True, False)
    """
    if isinstance(value, str):
        return bool(_SECRET_VALUE.search(unicodedata.normalize("NFKC", value)))
    if isinstance(value, dict):
        return any(is_secret_value(k) or is_secret_value(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(is_secret_value(v) for v in value)
    return False


def without_key_shapes(text: str) -> str:
    """``text`` with everything shaped like a credential (``is_secret_value``) replaced by ``[redacted]``:
    for a message another tool recorded (an inspect log's error: ``Incorrect API key provided: sk-...``),
    where the key itself is not known.

    >>> without_key_shapes("401: Incorrect API key provided: sk-proj-abcdefgh1234")
    '401: Incorrect API key provided: [redacted]'
    """
    return _SECRET_VALUE.sub(REDACTED, unicodedata.normalize("NFKC", text))


def is_credential_arg(name: Any, value: Any) -> bool:
    """Is ``name=value`` a credential (``token=hf_...``, ``api_key=sk-...``, ``cookie=session=...``)?

    Judged by the value first (an Authorization header or a provider's key is one whatever its
    name), then by the name: a credential's name with a flag or nothing for a value
    (``add_bos_token=True``, ``token=``) holds no secret; with any other value, a number
    included (``token=12345678901234``), it is one.

    >>> (is_credential_arg("token", "hf_abc"), is_credential_arg("token", 12345678901234),
    ...  is_credential_arg("add_bos_token", "True"))
    (True, True, False)
    """
    if isinstance(value, str) and looks_like_url(value):
        value = without_url_credentials(value)  # a URL is judged without its user:password and its keys
    if is_secret_value(value):
        return True
    if not is_credential_name(name):
        return False
    if value is None or isinstance(value, bool):
        return False
    return not (isinstance(value, str) and value.strip().lower() in _NOT_A_SECRET)


def _nested(text: str) -> Any:
    """A nested argument written as text (``{"X-Api-Key": "..."}``, ``{'a': 1}``), parsed; None if it is not one."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return None
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(stripped)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, (dict, list, tuple)):
            return value
    return _UNPARSED


_KEY_SHAPED = "(something shaped like a key)"  # how a withheld entry whose name is itself secret is named
_UNPARSED: Any = object()  # bracketed text that is no JSON or Python literal: it cannot be checked
_INNER_PAIR = re.compile(r"""["']?([A-Za-z_][\w.-]*)["']?\s*[:=]\s*["']?([^,"'}\]\s]*)""")


def is_credential_pair(value: Any) -> bool:
    """Is ``value`` a name and its value written as a pair, whose name or value is a credential?

    Headers and query parameters are often passed as pairs rather than a mapping (``[["X-Secret",
    "..."]]``, httpx's and requests' list form; ``{"name": ..., "value": ...}``, HAR's form). Such a
    pair is judged as ``name=value`` would be (``is_credential_arg``), by its first element,
    whatever the list holding it is called.

    >>> is_credential_pair(["X-Secret", "abc"]), is_credential_pair({"name": "code", "value": "k"})
    (True, True)
    >>> is_credential_pair(["temperature", 0.7]), is_credential_pair([1, "sk"])
    (False, False)
    """
    if isinstance(value, (list, tuple)) and len(value) == 2 and isinstance(value[0], str):
        name, item = value
    elif isinstance(value, dict) and len(value) == 2 and {"name", "value"} <= set(value):
        name, item = value["name"], value["value"]
        if not isinstance(name, str):
            return False
    else:
        return False
    if is_credential_name(name) and isinstance(item, (dict, list, tuple)):
        return True  # a header or cookie container, whatever it holds
    return is_credential_arg(name, item)


def public_settings(value: Any, path: str = "") -> tuple[Any, list[str]]:
    """``value`` (a sampling object, a model's arguments) without what may carry a credential, and
    the paths of what was left out (``["extra_headers", "extra_body.api_key"]``).

    Left out: an entry whose name or value is a credential (``is_credential_arg``), so every
    header and cookie; in a request-body container (``extra_body``) everything but numbers and
    flags; a string that parses as a nested object is checked inside (``'{"api_key": ...}'``);
    bracketed text that cannot be parsed is left out whole when anything in it looks like one.

    >>> public_settings({"temperature": 0.7, "extra_headers": {"Authorization": "Bearer sk-x"},
    ...                  "extra_body": {"top_k": 20, "api_key": "sk-x"}})
    ({'temperature': 0.7, 'extra_body': {'top_k': 20}}, ['extra_headers', 'extra_body.api_key'])
    """
    withheld: list[str] = []
    if isinstance(value, dict):
        kept: dict[Any, Any] = {}
        body = path.rsplit(".", 1)[-1].lower() in _BODY_NAMES
        for name, item in value.items():
            if is_secret_value(str(name)):  # the key as a name: left out, and never shown as a path
                withheld.append(f"{path}.{_KEY_SHAPED}" if path else _KEY_SHAPED)
                continue
            where = f"{path}.{name}" if path else str(name)
            if isinstance(item, (dict, list, tuple)):
                if body or is_credential_name(name) or is_credential_pair(item):  # headers, cookies: whatever they hold
                    withheld.append(where)
                    continue
            elif (body and isinstance(item, str)) or is_credential_arg(name, item):
                withheld.append(where)
                continue
            kept[name], inner = public_settings(item, where)
            withheld += inner
        return kept, withheld
    if isinstance(value, (list, tuple)):
        if is_credential_pair(value):
            return None, [path]
        items = []
        for i, item in enumerate(value):
            if is_secret_value(item) or is_credential_pair(item):
                withheld.append(f"{path}[{i}]")
                continue
            clean, inner = public_settings(item, f"{path}[{i}]")
            items.append(clean)
            withheld += inner
        return (items if isinstance(value, list) else tuple(items)), withheld
    if isinstance(value, str):
        if looks_like_url(value):
            public = without_url_credentials(value)
            if public != value:
                value = public
                withheld.append(f"{path} (a URL's credentials)")
        nested = _nested(value)
        if nested is _UNPARSED:
            if any(is_credential_arg(n, v) for n, v in _INNER_PAIR.findall(value)):
                return None, [path]
        elif nested is not None:
            clean, inner = public_settings(nested, path)
            if inner:
                return json.dumps(clean, ensure_ascii=False, sort_keys=True), inner
    return value, withheld


def split_args(text: str) -> list[str]:
    """lm-eval's ``model_args`` string cut at its top-level commas: a comma inside brackets or
    quotes (``headers={"a": "b", "c": "d"}``) belongs to its argument.

    >>> split_args('pretrained=m,headers={"a": "b", "c": "d"},dtype=float16')
    ['pretrained=m', 'headers={"a": "b", "c": "d"}', 'dtype=float16']
    """
    parts, depth, quote, start, escaped = [], 0, "", 0, False
    for i, char in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "{[(":
            depth += 1
        elif char in "}])":
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def public_args_text(text: str) -> tuple[str, list[str]]:
    """A ``name=value,...`` text (lm-eval's ``model_args``, a policy name made of them) without its
    credentials, and the names left out; a text that is a JSON object is read as one.

    >>> public_args_text('pretrained=m,headers={"X-Api-Key": "sk-abc"},token=12345678901234,add_bos_token=True')
    ('pretrained=m,add_bos_token=True', ['headers', 'token'])
    """
    nested = _nested(text)
    if isinstance(nested, dict):
        clean, withheld = public_settings(nested)
        return without_url_credentials(
            ",".join(f"{k}={_shown(v)}" for k, v in sorted(clean.items(), key=lambda kv: str(kv[0])))
        ), withheld
    kept, withheld = [], []
    for part in split_args(text):
        name, mark, value = part.partition("=")
        if "://" in name or "?" in name:  # an address, not a name=value pair: its own "=" are its query's
            public = without_url_credentials(part)
            if public != part:
                withheld.append("(a URL's credentials)")
            if public and not is_secret_value(public):
                kept.append(public)
            continue
        if not mark:
            if is_secret_value(part):
                withheld.append(_KEY_SHAPED)  # never a character of it
            else:
                kept.append(part)
            continue
        if is_secret_value(name):
            withheld.append(_KEY_SHAPED)
            continue
        if is_credential_arg(name, value):
            withheld.append(name.strip())
            continue
        clean, inner = public_settings(value, name.strip())
        if clean is None:
            withheld += inner
            continue
        withheld += inner
        kept.append(part if clean == value else f"{name}={clean}")
    joined = ",".join(kept)
    public = without_url_credentials(joined)
    if public != joined and not withheld:
        withheld.append("(a URL's credentials)")
    return public, withheld


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]*@")
# A URL up to whitespace or a comma (lm-eval's model_args are comma-separated name=value pairs); an
# address without a scheme counts too once it has a query (``host/c?sig=...``).
_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s,]*|[^\s,?#=&]*\?[^\s,=]*=[^\s,]*")
_QUERY = re.compile(r"\?[^\s,=]*=")


def looks_like_url(text: str) -> bool:
    """Does ``text`` hold an address whose user, query or fragment could carry a credential?"""
    return "://" in text or bool(_QUERY.search(text))


def _is_credential_query_part(part: str) -> bool:
    name, mark, value = part.partition("=")
    name = urllib.parse.unquote_plus(name)
    if not mark:
        return is_secret_value(name)
    return is_secret_value(name) or is_credential_arg(name, urllib.parse.unquote_plus(value))


def _url_without_credentials(url: str) -> str:
    url = _URL_USERINFO.sub(r"\1", url)
    # A fragment is never sent to the server, so it is no part of which model answered; it is where
    # tokens are handed to a page (OAuth's ``#access_token=...``): left out whole.
    url = url.partition("#")[0]
    base, mark, query = url.partition("?")
    if not mark:
        return base
    kept = [p for p in query.split("&") if p and not _is_credential_query_part(p)]
    return base + ("?" + "&".join(kept) if kept else "")


def without_url_credentials(text: str) -> str:
    """Every URL in ``text`` without its credentials: ``scheme://user:password@host`` -> ``scheme://host``,
    a query parameter that is one left out (judged by ``is_credential_arg``, its name decoded: Azure's
    ``?api-key=...``, a SAS URL's ``&sig=...``, a Functions URL's ``?code=...``; a bare value shaped like
    a key), and the fragment left out whole (``#token=...``).

    >>> without_url_credentials("base_url=http://me:s3cret@127.0.0.1:8000/v1")
    'base_url=http://127.0.0.1:8000/v1'
    >>> without_url_credentials("base_url=https://h/v1?api-key=sk-abc&api-version=2024-06-01")
    'base_url=https://h/v1?api-version=2024-06-01'
    >>> without_url_credentials("https://a.blob.core.windows.net/c?sv=2024&sig=KEY#token=KEY")
    'https://a.blob.core.windows.net/c?sv=2024'
    """
    return _URL.sub(lambda m: _url_without_credentials(m.group()), text)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.external.redaction"))
