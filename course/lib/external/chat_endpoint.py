# Over 600 lines because the one network client holds every way an endpoint fails.
"""Sampling rollouts from an OpenAI-compatible chat endpoint: everything but the command line.

This module owns what ``python -m course.rollout_sample`` (the tool, which parses arguments
and prints) relies on:

  * the recorded settings: ``policy_name`` (``model@host[:port]``), ``sampling_settings``,
    ``request_plan`` (one request per sample, seeded ``seed + i``, or one native ``n``
    request), ``chat_messages`` and ``rollout_record`` (frozen-rollouts or selection-pack line);
  * the key: ``resolve_api_key`` (environment, then ``./.env`` via ``course.lib.external.dotenv``),
    ``check_api_key`` and ``server_excerpt`` (nothing a server says reaches the terminal raw
    or with the key in it; the rule for "the key in it" is ``course.lib.external.redaction``);
  * the endpoint: ``Endpoint`` (one request = one total deadline and one size cap,
    ``response_cap``), ``parse_chat_completion`` (a 200 answer's shape checked here, not by the
    SDK), the retry policy (``is_retryable``, ``parse_retry_after``, ``retry_delay``) and
    ``sample_item`` (one item's completions, the key redacted from them, raising
    ``SamplingStopped`` when it cannot);
  * the output file: ``output_problem(out, in_place=True)``, resume (``inspect_existing`` -> ``ExistingOutput``, each
    line checked against its dataset item's ``item_fingerprint``), ``written_by_this_tool`` and
    ``LineAppender`` (whole lines only, fsync'd, one writer).

No argparse and no printing: progress goes through a ``log`` callback the caller passes in.
The tool's docstring explains the decisions (retries, resume, ``--force``) to a user.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import os
import re
import stat
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from course.errors import CourseError
from course.lib.external.redaction import MIN_SECRET_CHARS, redact, redactable
from course.lib.records.jsonl import dumps_line, iter_objects, json_kind, line_ends, open_input, output_problem
from course.lib.records.temporaries import atomic_file
from course.lib.visible import visible

DEFAULT_BASE_URL = "https://api.groq.com/openai/v1"
DEFAULT_KEY_ENV = "GROQ_API_KEY"
NO_KEY_ENV = "NONE"          # --api-key-env NONE: the endpoint needs no key
PLACEHOLDER_KEY = "no-key"   # what is sent instead (the SDK insists on some string)
OPENAI_MISSING = "sampling from an endpoint needs the openai package: pip install -e '.[openai]'"

# HTTP statuses worth asking again: timeout, conflict, rate limit, server-side trouble.
RETRYABLE_STATUSES = frozenset({408, 409, 429})
# A server asking for a longer pause than this (a daily quota, say) is not waited for:
# the run stops and the resumable file says where to pick up.
MAX_WAIT_SECONDS = 120.0
# Anything a server says is shown cut to this many characters (escaped): a 5 MB error page
# is one readable line on the terminal, never megabytes.
EXCERPT_CHARS = 200
# The most bytes one answer may have: a floor for an answer's metadata and error pages, plus
# 1 KiB per requested token (n x max_tokens). No tokenizer's token is anywhere near 1 KiB of
# JSON, even escaped, so a bigger answer is not a completion of the request; it is refused
# before it is in memory, and never written.
RESPONSE_FLOOR_BYTES = 8 << 20
RESPONSE_BYTES_PER_TOKEN = 1 << 10


# ---------------------------------------------------------------------------
# Pure helpers: settings, record shapes, retry schedule. No I/O.
# ---------------------------------------------------------------------------
def policy_name(model: str, base_url: str) -> str:
    """``model@host[:port]``: which weights, served where. Credentials in the URL are dropped.

    >>> policy_name("llama-3.1-8b-instant", "https://api.groq.com/openai/v1")
    'llama-3.1-8b-instant@api.groq.com'
    >>> policy_name("qwen2.5:0.5b", "http://user:secret@127.0.0.1:11434/v1")
    'qwen2.5:0.5b@127.0.0.1:11434'
    """
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CourseError(f"--base-url: expected an http(s) URL such as {DEFAULT_BASE_URL}, got {base_url!r}")
    host = parts.hostname
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return f"{model}@{host}" + (f":{parts.port}" if parts.port is not None else "")


def sampling_settings(
    *,
    temperature: float,
    top_p: float,
    max_tokens: int,
    seed: int,
    n: int,
    n_strategy: str = "separate",
    system_prompt: str | None = None,
) -> dict[str, Any]:
    """The ``sampling`` object recorded on every line: how one sample is drawn.

    The sample count is not part of it (see the module docstring): with separate
    requests, sample ``i`` is drawn the same way whatever ``n`` is.

    >>> sampling_settings(temperature=0.8, top_p=1.0, max_tokens=64, seed=7, n=1)
    {'temperature': 0.8, 'top_p': 1.0, 'max_tokens': 64, 'seed': 7}
    >>> sampling_settings(temperature=0.8, top_p=1.0, max_tokens=64, seed=7, n=4) == sampling_settings(
    ...     temperature=0.8, top_p=1.0, max_tokens=64, seed=7, n=1)
    True
    >>> sampling_settings(temperature=0.8, top_p=1.0, max_tokens=64, seed=7, n=4, n_strategy="native")
    {'temperature': 0.8, 'top_p': 1.0, 'max_tokens': 64, 'seed': 7, 'n_strategy': 'native', 'n': 4}
    """
    sampling: dict[str, Any] = {
        "temperature": float(temperature),
        "top_p": float(top_p),
        "max_tokens": int(max_tokens),
        "seed": int(seed),
    }
    if n > 1 and n_strategy == "native":
        # n sequences drawn in one request are other draws than n seeded single requests.
        sampling["n_strategy"] = "native"
        sampling["n"] = int(n)
    if system_prompt is not None:
        sampling["system_prompt_sha256"] = hashlib.sha256(system_prompt.encode("utf-8")).hexdigest()
    return sampling


def chat_messages(prompt: str, system_prompt: str | None) -> list[dict[str, str]]:
    """The dataset prompt is the user message, verbatim; the optional system prompt goes first."""
    messages = [] if system_prompt is None else [{"role": "system", "content": system_prompt}]
    messages.append({"role": "user", "content": prompt})
    return messages


def request_plan(n: int, seed: int, n_strategy: str = "separate") -> list[dict[str, Any]]:
    """The per-request ``(n, seed)`` for one item.

    ``separate``: n requests, sample i seeded ``seed + i`` (the same seed n times would
    return one sample n times from any endpoint that honours seeds). ``native``: one.

    >>> request_plan(3, 10)
    [{'n': 1, 'seed': 10}, {'n': 1, 'seed': 11}, {'n': 1, 'seed': 12}]
    >>> request_plan(3, 10, "native")
    [{'n': 3, 'seed': 10}]
    """
    if n > 1 and n_strategy == "native":
        return [{"n": n, "seed": seed}]
    return [{"n": 1, "seed": seed + i} for i in range(n)]


def item_fingerprint(item_id: str, prompt: str, expected_answer: Any) -> str:
    """sha256 of one dataset item (id, prompt, expected_answer as one canonical JSON line).

    Written on every rollout line as ``item_sha256``, so that resuming can tell a completion of
    this very prompt from a completion of a prompt the dataset has since changed.

    >>> item_fingerprint("dev-0001", "What is 2 + 3?", 5)[:16]
    '9b9a92fd338d94d3'
    """
    line = dumps_line({"expected_answer": expected_answer, "id": item_id, "prompt": prompt})
    return hashlib.sha256(line.encode("utf-8")).hexdigest()


def rollout_record(item_id: str, completions: Sequence[str], policy: str, sampling: Mapping[str, Any],
                   item_sha256: str | None = None) -> dict[str, Any]:
    """One output line: frozen-rollouts shape for one sample, selection-pack shape for several.

    >>> rollout_record("dev-0001", ["Final: 3"], "m@h", {"seed": 1})
    {'id': 'dev-0001', 'completion': 'Final: 3', 'policy': 'm@h', 'sampling': {'seed': 1}}
    >>> rollout_record("dev-0001", ["a", "b"], "m@h", {"seed": 1})["samples"][1]
    {'sample_index': 1, 'completion': 'b'}
    """
    record: dict[str, Any] = {"id": item_id}
    if len(completions) == 1:
        record["completion"] = completions[0]
    else:
        record["samples"] = [{"sample_index": i, "completion": c} for i, c in enumerate(completions)]
    record["policy"] = policy
    record["sampling"] = dict(sampling)
    if item_sha256 is not None:
        record["item_sha256"] = item_sha256
    return record


def response_cap(n: int, max_tokens: int) -> int:
    """The most bytes an answer to a request for ``n`` choices of ``max_tokens`` tokens may have.

    >>> response_cap(1, 64)
    8454144
    """
    return RESPONSE_FLOOR_BYTES + RESPONSE_BYTES_PER_TOKEN * int(n) * int(max_tokens)


def is_retryable(status: int | None) -> bool:
    """None stands for 'no HTTP answer at all' (connection refused, dropped, timed out).

    >>> [is_retryable(s) for s in (None, 400, 401, 408, 429, 500, 503)]
    [True, False, False, True, True, True, True]
    """
    return status is None or status in RETRYABLE_STATUSES or 500 <= status <= 599


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds the server asks us to wait: ``retry-after-ms``, else ``Retry-After`` (seconds or HTTP date).

    >>> parse_retry_after({"retry-after": "3"})
    3.0
    >>> parse_retry_after({"retry-after-ms": "250", "retry-after": "3"})
    0.25
    >>> parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0)
    10.0
    >>> parse_retry_after({"retry-after": "soon"}) is None
    True
    """
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000.0
            if value >= 0 and value == value:
                return value
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw)
        return value if value >= 0 and value == value else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def retry_delay(attempt: int, backoff: float, retry_after: float | None) -> float:
    """Wait before retry ``attempt + 1``: the server's Retry-After if given, else ``backoff * 2**attempt``.

    >>> [retry_delay(a, 1.0, None) for a in range(4)]
    [1.0, 2.0, 4.0, 8.0]
    >>> retry_delay(0, 1.0, 7.5)
    7.5
    """
    if retry_after is not None:
        return float(retry_after)
    return float(backoff) * (2 ** attempt)


def server_excerpt(text: str, secret: str | None, limit: int = EXCERPT_CHARS) -> str:
    """What a server said, safe to print: key redacted FIRST (so a cut cannot leave part of it),
    then cut to ``limit`` characters and escaped with ``course.lib.visible`` (no raw ESC, RLO or NUL
    reaches the terminal). The key is looked for (``course.lib.external.redaction``: any case, split by
    whitespace, half of it or more) in the part that can be shown, plus ample room for a key
    that straddles the cut, never in megabytes that are only counted.

    >>> server_excerpt("\\x1b[31mred\\u202e", None)
    '⟨U+001B⟩[31mred⟨U+202E⟩'
    >>> server_excerpt("x" * 5_000_000, None).endswith("… [4999800 more characters]")
    True
    >>> server_excerpt("key GSK_ABCDEFGH12345678 refused", "gsk_abcdefgh12345678")
    'key [redacted] refused'
    """
    if redactable(secret) and secret != PLACEHOLDER_KEY:
        head = text[: 64 * limit + 4 * len(secret)]  # type: ignore[arg-type]  # redactable: secret is a str
        text = redact(head, secret) + text[len(head):]
    return visible(text, limit=limit)


def redact_key(text: str, secret: str | None) -> str:
    """``text`` without the key (``course.lib.external.redaction.redact``); the placeholder key is no secret."""
    return text if secret == PLACEHOLDER_KEY else redact(text, secret)


def short_key_warning(key: str, source: str) -> str | None:
    """The warning for a key too short to redact by substring (None: it is redacted normally)."""
    if key == PLACEHOLDER_KEY or redactable(key):
        return None
    return (f"warning: the API key ({source}) has {len(key)} character(s), fewer than {MIN_SECRET_CHARS}: it is not "
            f"redacted from what the server says (that would blank out ordinary text); a real provider key is longer")


def check_api_key(key: str, source: str) -> None:
    """Refuse, before any request, a key no HTTP header can carry; never show any character of it.

    A key pasted with a stray character (a non-breaking space, a NUL, a newline from a file)
    would otherwise fail deep inside the HTTP library with a message quoting the header.

    >>> check_api_key("gsk_abc", "X")
    >>> try:
    ...     check_api_key("gsk_\\u00e9", "GROQ_API_KEY from environment")
    ... except CourseError as exc:
    ...     print(str(exc).split(";")[0])
    GROQ_API_KEY from environment: the API key has a non-ASCII character at position 5 of 5
    """
    for position, ch in enumerate(key, start=1):
        if "!" <= ch <= "~":
            continue
        kind = ("a non-ASCII character" if ord(ch) > 0x7F else "a space" if ch == " "
                else "a NUL character" if ch == "\0" else "a control character")
        raise CourseError(
            f"{source}: the API key has {kind} at position {position} of {len(key)}; an API key is printable "
            f"ASCII without spaces (the key is not shown: re-copy it from your provider)"
        )


# ---------------------------------------------------------------------------
# The key: environment first, then ./.env; never printed.
# ---------------------------------------------------------------------------
def resolve_api_key(
    env_name: str, environ: Mapping[str, str], dotenv_path: str | os.PathLike[str] = ".env"
) -> tuple[str, str]:
    """``(key, where_it_came_from)``; ``CourseError`` naming the variable when there is none."""
    from course.lib.external.dotenv import lookup, read_dotenv

    if env_name.upper() == NO_KEY_ENV:
        return PLACEHOLDER_KEY, "--api-key-env NONE (placeholder key)"
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", env_name):
        raise CourseError(f"--api-key-env: expected an environment variable name or NONE, got {env_name!r}")
    found = lookup(env_name, environ, {} if environ.get(env_name) else read_dotenv(dotenv_path))
    if found is None:
        raise CourseError(
            f"no API key: set {env_name} in the environment or put a line {env_name}=... in {dotenv_path} "
            f"in the current directory (for a local server that needs no key, pass --api-key-env NONE)"
        )
    key, source = found
    return key, f"{env_name} from {source}"


# ---------------------------------------------------------------------------
# Resume: what an existing --out already holds.
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ExistingOutput:
    """The usable part of an existing output file."""

    done_ids: tuple[str, ...]   # ids of complete, valid lines (a prefix of the dataset's ids)
    keep_bytes: int             # file length up to the last complete line
    torn_tail: bool             # True when a last, newline-less fragment was dropped
    mismatch: str | None        # why this file cannot be resumed by this run (None: it can)


def inspect_existing(
    path: Path, dataset_ids: Sequence[str], policy: str, sampling: Mapping[str, Any], n: int,
    fingerprints: Sequence[str] | None = None,
) -> ExistingOutput:
    """Read ``path`` (which exists) and decide whether this run may append to it.

    A malformed complete line is a ``CourseError`` (``path:line: ...``): that is not
    an interruption but a damaged or foreign file, and guessing would risk the data.
    A different policy, sampling, shape or id order is returned as ``mismatch``
    (the caller refuses unless ``--force``); so is a line whose ``item_sha256`` is not its
    dataset item's ``item_fingerprint`` (``fingerprints``, in dataset order): the item's
    prompt or expected answer changed since the line was written, and keeping it would
    keep a completion of the old prompt.
    """
    complete_lines, cut, size = line_ends(path)  # cut is 0 when there is no complete line at all
    torn = cut < size
    done: list[str] = []
    mismatch: str | None = None
    if complete_lines == 0:
        return ExistingOutput((), cut, torn, None)
    lines = iter_objects(path)  # the project's one JSONL reader (BOM, CRLF, JSON: path:line errors)
    try:
        for lineno, record in lines:
            problem = _record_problem(record, policy, sampling, n)
            if problem is None and lineno > len(dataset_ids):
                problem = f"id {record['id']!r} is beyond the dataset's {len(dataset_ids)} items"
            elif problem is None and record["id"] != dataset_ids[lineno - 1]:
                problem = (f"id {record['id']!r} where the dataset has {dataset_ids[lineno - 1]!r}: "
                           f"the file is not this dataset's items in order")
            elif problem is None and fingerprints is not None:
                problem = _fingerprint_problem(record, fingerprints[lineno - 1])
            if problem is not None:
                mismatch = f"{path}:{lineno}: {problem}"
                break
            done.append(record["id"])
            if lineno == complete_lines:
                break  # stop before the reader meets a torn last line
    except CourseError as exc:  # raised by the reader only: a damaged complete line
        raise CourseError(f"{exc}; fix or remove {path}, or pass --force to start it over") from None
    finally:
        lines.close()
    return ExistingOutput(tuple(done), cut, torn, mismatch)


def _fingerprint_problem(record: Mapping[str, Any], expected: str) -> str | None:
    """Why ``record`` is not a completion of its item as the dataset holds it now (None: it is)."""
    recorded = record.get("item_sha256")
    if recorded is None:
        return (f"no item_sha256 on the line of {record['id']!r}: written before each line recorded which prompt it "
                f"answers, so whether the dataset changed since cannot be checked")
    if recorded != expected:
        return (f"item {record['id']!r} was sampled for another prompt or expected_answer than the dataset holds "
                f"now (item_sha256 differs): the dataset changed since this file was written")
    return None


def _record_problem(record: Mapping[str, Any], policy: str, sampling: Mapping[str, Any], n: int) -> str | None:
    """Why ``record`` is not a line this run would have written (None: it is)."""
    if not isinstance(record.get("id"), str) or not record["id"]:
        return "no string 'id': not a rollout line"
    if record.get("policy") != policy:
        return f"written by policy {record.get('policy')!r}, this run is {policy!r}"
    if record.get("sampling") != dict(sampling):
        return f"written with sampling {dumps_line(record.get('sampling'))}, this run uses {dumps_line(dict(sampling))}"
    samples = record.get("samples")
    if n == 1:
        if isinstance(samples, list):
            return f"a selection-pack line with {len(samples)} samples, this run draws 1 (a frozen-rollouts file)"
        if not isinstance(record.get("completion"), str):
            return "not a frozen-rollouts line (expected a 'completion' string)"
    else:
        if not isinstance(samples, list):
            return f"a frozen-rollouts line, this run draws {n} samples per item (a selection pack)"
        if len(samples) != n:
            return f"{len(samples)} samples per item, this run draws {n}"
        if any(not isinstance(x, dict) or x.get("sample_index") != i or not isinstance(x.get("completion"), str)
               for i, x in enumerate(samples)):
            return "samples not numbered 0..n-1 with string completions: not a pack this tool wrote"
    return None


# ---------------------------------------------------------------------------
# The endpoint: one chat completion with our retry policy around it.
# ---------------------------------------------------------------------------
class SamplingStopped(Exception):
    """An item could not be sampled; the run stops and the file stays resumable."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class MalformedResponse(ValueError):
    """A 200 answer that is not an OpenAI chat completion with the choices asked for."""


class WrongChoiceCount(MalformedResponse):
    """A well-formed chat completion with another number of choices than ``n`` asked for."""


def _json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_chat_completion(body: bytes, expected: int) -> list[str]:
    """The text of each choice, in ``index`` order, from the raw bytes of a 200 answer.

    The SDK's own parsing is not used: it raises a bare ``JSONDecodeError`` on a non-JSON
    body and *accepts* wrong shapes (``{"choices": "abc"}`` becomes five "choices"), which
    would put empty completions in the file and score an endpoint bug as a model failure.
    Here every shape is checked and a wrong one raises ``MalformedResponse`` saying what.

    ``content: null`` is valid in the OpenAI schema (a refusal, a reasoning model that spent
    its whole budget before answering) and is recorded as ``""``: the model gave no answer
    text, which the scorer rightly scores 0. Everything else in a choice is taken verbatim,
    trailing newlines included (llama.cpp keeps them; the scorer, not this tool, judges).

    >>> parse_chat_completion(b'{"choices": [{"index": 0, "message": {"content": "Final: 3"}}]}', 1)
    ['Final: 3']
    >>> parse_chat_completion(b'{"choices": "abc"}', 1)
    Traceback (most recent call last):
    course.lib.external.chat_endpoint.MalformedResponse: 'choices' is a string, expected an array
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedResponse(f"the body is not UTF-8 (byte {exc.start + 1})") from None
    if not text.strip():
        raise MalformedResponse("the body is empty")
    try:
        data = json.loads(text, parse_constant=_json_constant)
    except (ValueError, RecursionError) as exc:
        # Truncated: the text ends where the parser still wanted more (inside a string, or at the end).
        cut = isinstance(exc, json.JSONDecodeError) and (
            exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated")
        )
        what = "truncated JSON" if cut else "not JSON"
        raise MalformedResponse(f"the body is {what}") from None
    if not isinstance(data, dict):
        raise MalformedResponse(f"the body is {json_kind(data)}, expected an object")
    choices = data.get("choices", _ABSENT)
    if choices is _ABSENT:
        raise MalformedResponse("no 'choices' field" + (" (it has 'error')" if "error" in data else ""))
    if not isinstance(choices, list):
        raise MalformedResponse(f"'choices' is {json_kind(choices)}, expected an array")
    texts: dict[int, str] = {}
    for position, choice in enumerate(choices):
        where = f"choice {position}"
        if not isinstance(choice, dict):
            raise MalformedResponse(f"{where} is {json_kind(choice)}, expected an object")
        index = choice.get("index", position)
        if type(index) is not int or index < 0:
            raise MalformedResponse(f"{where}: 'index' is {json_kind(index)}, expected a non-negative integer")
        if index in texts:
            raise MalformedResponse(f"{where}: index {index} appears twice")
        message = choice.get("message", _ABSENT)
        if message is _ABSENT:
            raise MalformedResponse(f"{where}: no 'message'")
        if not isinstance(message, dict):
            raise MalformedResponse(f"{where}: 'message' is {json_kind(message)}, expected an object")
        content = message.get("content", _ABSENT)
        if content is _ABSENT:
            raise MalformedResponse(f"{where}: the message has no 'content'")
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise MalformedResponse(f"{where}: 'content' is {json_kind(content)}, expected a string")
        try:
            content.encode("utf-8")
        except UnicodeEncodeError:
            raise MalformedResponse(f"{where}: 'content' holds a lone surrogate escape, which is not "
                                    "Unicode text") from None
        texts[index] = content
    if len(texts) != expected:
        raise WrongChoiceCount(f"the endpoint returned {len(texts)} choice(s) where n={expected} was asked for")
    if sorted(texts) != list(range(expected)):
        raise MalformedResponse(f"choice indices {sorted(texts)}, expected 0..{expected - 1}")
    return [texts[i] for i in range(expected)]


_ABSENT: Any = object()


def _error_text(response: Any) -> str:
    """The useful part of an error answer: OpenAI's ``error.message`` when the body has one, else the body."""
    try:
        raw = response.text
    except Exception:  # noqa: BLE001 - a body that cannot be decoded is still an answer
        return ""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return raw.strip()
    error = data.get("error", data) if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) and message else raw.strip()


# ---------------------------------------------------------------------------
# One request: a total deadline and a size cap, whatever HTTP library the SDK uses.
# ---------------------------------------------------------------------------
class DeadlineExceeded(Exception):
    """No complete answer within the total deadline of one request."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no complete answer within {seconds:g} s (the whole request: connect, send, wait, read)")


class AnswerTooLarge(Exception):
    """An answer larger than ``response_cap`` allows for the request (refused before it is all read)."""

    def __init__(self, status: int, cap: int, n: int, max_tokens: int) -> None:
        super().__init__(f"the endpoint's answer (HTTP {status}) is larger than {cap:,} bytes, the most a reply to "
                         f"n={n}, max_tokens={max_tokens} can need; not read further")


class Endpoint:
    """The SDK client of one ``--base-url``; ``request`` sends one chat request and returns ``(status, body)``.

    Two bounds the SDK does not give:

      * a total deadline. The SDK's ``timeout`` is httpx's, which applies per phase and per
        read: a server that trickles one byte every half second never trips a 2 s timeout, and
        one request can take minutes. Here each request runs in a worker thread and the caller
        waits for it at most ``timeout`` seconds, start to last byte. Past that the client is
        closed (its connections with it, which ends the worker's reads) and replaced, and
        ``DeadlineExceeded`` is raised: a timeout, retried like one. This holds whatever HTTP
        library the installed SDK is built on (httpx or its successor), because it uses only
        the SDK's public API.
      * a size cap. The answer is read as a stream (the SDK's ``with_streaming_response``) and
        refused with ``AnswerTooLarge`` as soon as it passes ``response_cap`` (or at once when
        its Content-Length says it will), so a 300 MB answer is neither held in memory nor
        written. An error answer (4xx, 5xx) is read whole by the SDK before it raises; the
        deadline bounds it.
    """

    def __init__(self, openai: Any, *, api_key: str, base_url: str, timeout: float) -> None:
        self._openai = openai
        self._options = {"api_key": api_key, "base_url": base_url, "timeout": timeout}
        self.timeout = timeout
        self._client = self._new_client()

    def _new_client(self) -> Any:
        # max_retries=0: the SDK would otherwise retry silently; our policy (sample_item) is logged.
        return self._openai.OpenAI(max_retries=0, **self._options)

    def request(self, body: Mapping[str, Any]) -> tuple[int, bytes]:
        """``(HTTP status, raw body)`` of one chat request, or the SDK's exception for an error answer."""
        outcome: dict[str, Any] = {}
        client, finished = self._client, threading.Event()
        cap_args = (int(body.get("n", 1)), int(body.get("max_tokens", 0)))

        def work() -> None:
            try:
                outcome["answer"] = _read_capped(client, body, *cap_args)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread as is
                outcome["error"] = exc
            finally:
                finished.set()

        threading.Thread(target=work, name="chat-request", daemon=True).start()
        if not finished.wait(self.timeout):
            self._client = self._new_client()  # the old one is abandoned with its request
            try:
                client.close()
            except Exception:  # noqa: BLE001 - closing under a running request may complain; it is gone anyway
                pass
            raise DeadlineExceeded(self.timeout)
        if "error" in outcome:
            raise outcome["error"]
        return outcome["answer"]

    def close(self) -> None:
        self._client.close()


def _read_capped(client: Any, body: Mapping[str, Any], n: int, max_tokens: int) -> tuple[int, bytes]:
    cap = response_cap(n, max_tokens)
    with client.chat.completions.with_streaming_response.create(**body) as response:
        declared = str(response.headers.get("content-length", "")).strip()
        if declared.isdigit() and int(declared) > cap:
            raise AnswerTooLarge(response.status_code, cap, n, max_tokens)
        data = bytearray()
        for chunk in response.iter_bytes():
            data += chunk
            if len(data) > cap:
                raise AnswerTooLarge(response.status_code, cap, n, max_tokens)
        return response.status_code, bytes(data)


def _describe_failure(exc: BaseException, openai: Any, key: str) -> tuple[int | None, float | None, str]:
    """``(http_status or None, retry_after_seconds, printable text)`` for an exception from the SDK.

    The one place the SDK's exception types are interpreted. Text from the server is
    redacted, cut and escaped (``server_excerpt``). A status answer is weather or a usage
    problem (classified by status); no answer at all is weather (None: retried); any
    other ``openai`` error is reported as itself. Other exceptions are bugs and surface.
    """
    if isinstance(exc, DeadlineExceeded):
        return None, None, f"timed out: {exc}"
    if isinstance(exc, AnswerTooLarge):
        return 0, None, str(exc)
    if isinstance(exc, openai.APIStatusError):
        headers = getattr(exc.response, "headers", {}) or {}
        said = server_excerpt(_error_text(exc.response), key)
        return exc.status_code, parse_retry_after(headers), f"HTTP {exc.status_code}: {said or '(empty body)'}"
    if isinstance(exc, openai.APITimeoutError):
        return None, None, "timed out"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        return None, None, f"connection failed ({type(cause).__name__ if cause else 'no answer'})"
    if isinstance(exc, openai.OpenAIError):
        return 0, None, f"{type(exc).__name__}: {server_excerpt(str(exc), key)}"
    raise exc  # not from the SDK: a bug, not weather; let it surface


def sample_item(
    send: Callable[[Mapping[str, Any]], tuple[int, bytes]],
    openai: Any,
    *,
    item_id: str,
    base_request: Mapping[str, Any],
    plan: Sequence[Mapping[str, Any]],
    max_retries: int,
    backoff: float,
    key: str,
    sleep: Callable[[float], None] = time.sleep,
    log: Callable[[str], None] = lambda message: None,
) -> tuple[list[str], int]:
    """All completions for one item and the number of HTTP requests it took.

    ``send`` is ``Endpoint.request``: it returns ``(status, body)`` or raises the SDK's exceptions
    for failed requests (and ``DeadlineExceeded``, ``AnswerTooLarge``); the body is parsed here by
    ``parse_chat_completion``. A completion that gives the key away (a server or a model echoing
    it) has it replaced by ``[redacted]`` before it is returned, and the log says so: the key
    never reaches the rollouts, nor the results, summaries and report made from them.
    ``sleep`` is injectable so tests never wait.
    """
    completions: list[str] = []
    requests = 0
    shown = visible(item_id, limit=80)
    for step in plan:
        n = int(step["n"])
        native_hint = ("; if this server does not support n > 1 (llama.cpp's does not, Ollama ignores it) "
                       "use --n-strategy separate" if n > 1 else "")
        attempt = 0
        while True:
            requests += 1
            try:
                status, body = send({**base_request, **step})
                break
            except Exception as exc:  # noqa: BLE001 - classified in _describe_failure; unknown kinds re-raise
                # _describe_failure re-raises what it cannot classify, so a status is there
                status, retry_after, text = _describe_failure(exc, openai, key)  # type: ignore[assignment]
                if status in (401, 403):
                    raise SamplingStopped(f"{shown}: the endpoint rejected the API key ({text})", 2) from None
                if status == 0:
                    raise SamplingStopped(f"{shown}: {text}", 2) from None
                if not is_retryable(status):
                    # 400/404/422...: a wrong model name or parameter, a usage error (exit 2), not weather.
                    raise SamplingStopped(f"{shown}: {text} (not retried: asking again would not "
                                          f"help){native_hint}", 2) from None
                if attempt >= max_retries:
                    raise SamplingStopped(f"{shown}: {text}; gave up after {max_retries} "
                                          f"retries{native_hint}", 1) from None
                delay = retry_delay(attempt, backoff, retry_after)
                if delay > MAX_WAIT_SECONDS:
                    raise SamplingStopped(
                        f"{shown}: {text}; the server asks to wait {delay:.0f} s (more than "
                        f"{MAX_WAIT_SECONDS:.0f} s)", 1
                    ) from None
                why = "as Retry-After asks" if retry_after is not None else f"backoff {backoff:g} s x 2^{attempt}"
                log(f"  {shown}: {text}; retry {attempt + 1}/{max_retries} in {delay:.2f} s ({why})")
                sleep(delay)
                attempt += 1
        try:
            texts = parse_chat_completion(body, n)
        except WrongChoiceCount as bad:
            hint = ": this server does not honour n > 1, use --n-strategy separate (the default)" if n > 1 else ""
            raise SamplingStopped(f"{shown}: {bad}{hint}", 2) from None
        except MalformedResponse as bad:
            excerpt = server_excerpt(body.decode("utf-8", errors="replace"), key, limit=EXCERPT_CHARS)
            raise SamplingStopped(
                f"{shown}: the endpoint's answer (HTTP {status}, {len(body)} bytes) is not a "
                f"chat completion: {bad}; it begins: {excerpt or '(nothing)'}", 2
            ) from None
        for text in texts:
            clean = redact_key(text, key)
            if clean != text:
                log(f"  {shown}: the answer gave the API key away (in any case or split); it is written as "
                    f"[redacted] in its place")
            completions.append(clean)
    return completions, requests


# ---------------------------------------------------------------------------
# The output file: checked before any request, then grown one whole line at a time.
# ---------------------------------------------------------------------------
_os_write = os.write  # the fault tests replace it to simulate a full disk part-way through a line

_OUR_PREFIXES = (b'{"completion": ', b'{"id": ')  # dumps_line sorts keys: how every line we write begins


def written_by_this_tool(path: Path) -> bool:
    """Does ``path`` look like a rollouts file this tool wrote (so ``--force`` may start it over)?

    Only line 1 is read (at most 1 MB). An empty file and a torn first line of ours count as ours.
    """
    with open_input(path, "a rollouts file") as f:  # the one opener: never blocks on a FIFO
        first = f.readline(1 << 20)
    if not first:
        return True
    if not first.endswith(b"\n"):
        return first.startswith(_OUR_PREFIXES)
    try:
        record = json.loads(first.decode("utf-8"))
    except (ValueError, RecursionError):
        return False
    return (isinstance(record, dict) and isinstance(record.get("id"), str) and isinstance(record.get("policy"), str)
            and isinstance(record.get("sampling"), dict) and ("completion" in record or "samples" in record))


@dataclass(frozen=True)
class OutputPlan:
    """What to do with ``--out`` before the first request: start over, or append after the items it holds."""

    exists: bool
    done_ids: tuple[str, ...]  # items already in the file (skipped by this run)
    keep_bytes: int            # file length to keep (a torn last line is cut off)
    start_over: bool           # True: write a new file and rename it into place
    torn_bytes: int            # length of the newline-less fragment that will be dropped (0: none)


def plan_output(
    out: Path, dataset_path: str | os.PathLike[str], dataset_ids: Sequence[str], policy: str,
    sampling: Mapping[str, Any], n: int, *, force: bool, fingerprints: Sequence[str] | None = None,
) -> OutputPlan:
    """Check ``--out`` and decide between resuming and starting over (``CourseError`` when neither is safe).

    Resume is checked against the whole dataset's ids (and each item's fingerprint), so a run
    with a smaller ``--limit`` can still see a longer file. ``force`` starts over only a file
    whose first line this tool wrote.
    """
    problem = output_problem(out, in_place=True)  # the file is grown where it is, line by line
    if problem is not None:
        raise CourseError(f"--out {out}: {problem}")
    exists = out.exists()
    if exists and os.path.samefile(out, dataset_path):
        raise CourseError(f"--out {out} is the dataset itself; choose another output file")
    if exists and force and not written_by_this_tool(out):
        raise CourseError(f"--out {out}: --force only starts over a rollouts file this tool wrote, and line 1 "
                          f"of {out} is not one; move it away or choose another --out")
    if not exists or force:
        return OutputPlan(exists, (), 0, True, 0)
    existing = inspect_existing(out, dataset_ids, policy, sampling, n, fingerprints)
    if existing.mismatch is not None:
        raise CourseError(  # visible(): the file may be hand-edited (no raw RLO/ESC on the terminal)
            f"{visible(existing.mismatch, limit=600)}; resume with the settings that wrote {out}, "
            "choose another --out, "
            f"or pass --force to start it over"
        )
    torn = out.stat().st_size - existing.keep_bytes if existing.torn_tail else 0
    return OutputPlan(True, existing.done_ids, existing.keep_bytes, False, torn)


class LineAppender:
    """Grows ``--out`` by whole lines only, so an interruption never leaves a line resume would choke on.

    Each line is ONE ``os.write`` of its bytes on an ``O_APPEND`` descriptor, then ``fsync``: a
    kill leaves the file ending in a newline or in one newline-less fragment, which resume drops
    and says so. A write that fails part-way (disk full) is cut back to the last newline before
    the error is reported. Nothing touches the file before the first line is ready: resuming cuts a
    torn tail off then; starting over writes that line to a temporary file beside ``--out`` and
    renames it into place, so the old file stays whole until its replacement holds an item.
    """

    def __init__(self, path: Path, *, start_over: bool, keep_bytes: int) -> None:
        self.path = path
        self.start_over = start_over
        self.keep_bytes = keep_bytes
        self.fd: int | None = None

    def append(self, line: str) -> None:
        data = (line + "\n").encode("utf-8")
        if self.fd is None:
            self._open_with(data)
            return
        self._write(self.fd, data)

    def _open_with(self, data: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.start_over:
            # The new file is written as .NAME.tmp/NAME, a temporary marked as this project's before
            # anything else (course.lib.records.temporaries: only such folders are ever cleaned, here by the
            # next writer after a kill), then renamed into place.
            fd: int | None = None
            try:
                with atomic_file(self.path) as tmp:
                    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
                    self._lock(fd)  # the lock follows the inode through the rename
                    self._write(fd, data)
            except BaseException:
                if fd is not None:
                    os.close(fd)
                raise
            self.fd = fd
            return
        # O_NONBLOCK: should --out have become a FIFO since the check, open fails instead of hanging.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise CourseError(f"--out {self.path}: is not a regular file; refusing to write to it")
            self._lock(fd)
            os.ftruncate(fd, self.keep_bytes)  # drop a torn last line, if any
            self._write(fd, data)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd

    def _lock(self, fd: int) -> None:
        """One writer per file: two runs resuming the same --out would write ids twice or out of order."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no advisory locks, one run at a time is on the user
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CourseError(f"--out {self.path}: another run is writing it; wait for that run to finish "
                              f"(then rerun to resume) or choose another --out") from None

    @staticmethod
    def _write(fd: int, data: bytes) -> None:
        start = os.lseek(fd, 0, os.SEEK_END)
        try:
            view = memoryview(data)
            while view:
                view = view[_os_write(fd, view):]
            os.fsync(fd)
        except OSError:
            try:
                os.ftruncate(fd, start)  # no fragment left behind by a failed write
            except OSError:
                pass
            raise

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.external.chat_endpoint"))
