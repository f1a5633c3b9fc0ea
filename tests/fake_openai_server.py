"""A local OpenAI-compatible chat endpoint for tests: 127.0.0.1, an ephemeral port, one thread.

It answers ``POST /v1/chat/completions`` the way the ``openai`` SDK expects, with
completions that are a pure function of the request, so tests can predict them:

  * the prompt's first ``A + B``, ``A - B`` or ``A * B`` is solved; the reply is
    ``Final: <value>`` when the request seed is even and the slip ``Final:<value>``
    (no space) when it is odd; without a seed it is ``Final: <value>``; a prompt
    with no such expression gets ``I don't know``;
  * with ``n`` > 1 choice ``i`` behaves as if seeded ``seed + i`` (``honour_n=False``
    makes it return one choice regardless, as some endpoints do).

Tests script failures: ``server.fail(request_number, status, headers)`` makes that
request (1-based, counting every request) answer with the status, or with
``status="drop"`` close the connection without a reply, or with ``status="stall"``
keep the client waiting (until the server stops, at most 30 s); ``server.fail_from(k, status)``
fails every request from the k-th on. ``server.raw(request_number, body, status=200)``
answers that request with exactly these bytes (``Content-Type: application/json`` unless
told otherwise), for malformed answers. ``server.requests`` records each request's
path, Authorization header and JSON body.

Hostile modes for the fault suite (issue #23), each for one request number:
  * ``server.trickle(k, interval)``: the whole answer (status line, headers, body) one byte every
    ``interval`` seconds; ``server.trickled[k]`` is how many bytes went out before the client left;
  * ``server.huge(k, size, declare_length=True)``: a well-formed chat completion whose content is
    ``size`` bytes of ``A``, sent in 1 MB chunks (with a Content-Length, or without one and
    closing the connection to end it); ``server.huge_sent[k]`` counts the bytes that went out;
  * ``server.echo_key(k, make, status=200)``: ``make(key)`` (the key the request carried) is the
    completion (status 200) or the error message (any other status);
  * ``server.hold(k)``: request ``k`` waits until the returned event is set, then answers normally.

``flavour`` imitates the answers of a real OpenAI-compatible server (see FLAVOURS below):
``"openai"`` (the default), ``"vllm"``, ``"ollama"``, ``"llamacpp"``.

    with FakeOpenAIServer() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# What each real server does with a chat request, as documented (only what the tests rely on):
#  * vLLM (docs.vllm.ai, "OpenAI Compatible Server": all Chat API parameters are supported, n and
#    seed included, plus extra sampling parameters): n choices per request, usage; its answers
#    also carry vLLM-only fields (choice 'stop_reason', message 'reasoning_content', top-level
#    'prompt_logprobs'), which a client must ignore.
#  * Ollama (docs.ollama.com/api/openai-compatibility, "Supported request fields": model,
#    messages, ..., seed, stop, stream, temperature, top_p, max_tokens, ...; n is not among
#    them): n is ignored and ONE choice comes back; system_fingerprint is "fp_ollama".
#  * llama.cpp's llama-server (tools/server utils.hpp, oaicompat params parsing: n != 1 throws
#    "Only one completion choice is allowed", answered as {"error": {"code": 500, ...,
#    "type": "server_error"}} by the versions we read): n > 1 is an HTTP 500; answers carry a
#    'timings' object and a build-number system_fingerprint; the text keeps a trailing
#    newline when the model emits one (trailing_newline=True here).
FLAVOURS = ("openai", "vllm", "ollama", "llamacpp")

_ARITHMETIC = re.compile(r"(-?\d+) ([-+*]) (-?\d+)")


def fake_completion(prompt: str, seed: int | None) -> str:
    """The completion the fake model gives (tests use it to predict outputs)."""
    m = _ARITHMETIC.search(prompt)
    if m is None:
        return "I don't know"
    a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
    answer = a + b if op == "+" else a - b if op == "-" else a * b
    return f"Final:{answer}" if seed is not None and seed % 2 == 1 else f"Final: {answer}"


class FakeOpenAIServer:
    def __init__(self, *, honour_n: bool = True, echo_key_on_401: bool = False, flavour: str = "openai",
                 trailing_newline: bool = False) -> None:
        if flavour not in FLAVOURS:
            raise ValueError(f"flavour {flavour!r}, expected one of {FLAVOURS}")
        self.flavour = flavour
        self.honour_n = honour_n and flavour != "ollama"
        self.echo_key_on_401 = echo_key_on_401
        self.trailing_newline = trailing_newline
        self.requests: list[dict[str, Any]] = []
        self._raw: dict[int, tuple[bytes, int, dict[str, str]]] = {}
        self._failures: dict[int, tuple[Any, dict[str, str]]] = {}
        self._fail_from: tuple[int, Any] | None = None
        self._trickle: dict[int, float] = {}
        self._huge: dict[int, tuple[int, bool]] = {}
        self._echo: dict[int, tuple[Any, int]] = {}
        self._hold: dict[int, threading.Event] = {}
        self.trickled: dict[int, int] = {}
        self.huge_sent: dict[int, int] = {}
        self._answered: dict[int, threading.Event] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    # -- scripting -----------------------------------------------------------
    def fail(self, request_number: int, status: Any, headers: dict[str, str] | None = None) -> None:
        self._failures[request_number] = (status, dict(headers or {}))

    def fail_from(self, request_number: int, status: Any) -> None:
        self._fail_from = (request_number, status)

    def raw(self, request_number: int, body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self._raw[request_number] = (body, status, {"Content-Type": "application/json", **(headers or {})})

    def trickle(self, request_number: int, interval: float) -> None:
        self._trickle[request_number] = interval
        self._answered[request_number] = threading.Event()  # wait_answered waits for this answer, not an earlier one

    def huge(self, request_number: int, size: int, declare_length: bool = True) -> None:
        self._huge[request_number] = (size, declare_length)
        self._answered[request_number] = threading.Event()

    def echo_key(self, request_number: int, make: Any, status: int = 200) -> None:
        self._echo[request_number] = (make, status)

    def wait_answered(self, request_number: int, timeout: float = 30) -> None:
        """Wait until the handler of request ``request_number`` is done (its counters are final).

        Counts from the last ``trickle``/``huge`` scripted for that number (numbers restart when a
        test clears ``requests``)."""
        with self._lock:
            event = self._answered.setdefault(request_number, threading.Event())
        assert event.wait(timeout), f"request {request_number} is still being answered"

    def hold(self, request_number: int) -> threading.Event:
        self._hold[request_number] = threading.Event()
        return self._hold[request_number]

    # -- lifecycle -----------------------------------------------------------
    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "FakeOpenAIServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the HTTP side -------------------------------------------------------
    def _planned_failure(self, number: int) -> tuple[Any, dict[str, str]] | None:
        if number in self._failures:
            return self._failures[number]
        if self._fail_from is not None and number >= self._fail_from[0]:
            return self._fail_from[1], {}
        return None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in separate writes: avoid 40 ms delayed-ACK stalls

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                self._send_bytes(status, json.dumps(payload).encode("utf-8"),
                                 {"Content-Type": "application/json", **(headers or {})})

            def _send_bytes(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                if self._number in server._trickle:
                    self._send_trickled(status, body, headers, server._trickle[self._number])
                    return
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def _send_trickled(self, status: int, body: bytes, headers: dict[str, str], interval: float) -> None:
                head = [f"HTTP/1.1 {status} OK", f"Content-Length: {len(body)}",
                        *(f"{k}: {v}" for k, v in headers.items())]
                whole = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
                sent = 0
                self.close_connection = True
                try:
                    for i in range(len(whole)):
                        if server._stopping.wait(interval):
                            break
                        self.connection.sendall(whole[i:i + 1])
                        sent += 1
                except OSError:  # the client gave up and closed the connection
                    pass
                server.trickled[self._number] = sent

            def _send_huge(self, size: int, declare_length: bool) -> None:
                prefix = (b'{"id": "chatcmpl-huge", "object": "chat.completion", '
                          b'"choices": [{"index": 0, "message": {"role": "assistant", "content": "')
                suffix = b'"}, "finish_reason": "length"}]}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if declare_length:
                    self.send_header("Content-Length", str(len(prefix) + size + len(suffix)))
                else:
                    self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                sent = 0
                try:
                    self.wfile.write(prefix)
                    chunk = b"A" * (1 << 20)
                    while sent < size and not server._stopping.is_set():
                        piece = chunk[: size - sent]
                        self.wfile.write(piece)
                        sent += len(piece)
                    self.wfile.write(suffix)
                except OSError:  # the client refused the rest and closed the connection
                    pass
                server.huge_sent[self._number] = sent

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                self._number = 0
                try:
                    self._post()
                finally:
                    with server._lock:
                        server._answered.setdefault(self._number, threading.Event()).set()

            def _post(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                auth = self.headers.get("Authorization", "")
                try:
                    body = json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError):
                    body = None
                with server._lock:
                    server.requests.append({"path": self.path, "authorization": auth, "body": body})
                    number = len(server.requests)
                self._number = number
                if number in server._hold:
                    server._hold[number].wait(30)
                if number in server._huge:
                    self._send_huge(*server._huge[number])
                    return
                if number in server._echo:
                    make, echo_status = server._echo[number]
                    text = make(auth.removeprefix("Bearer "))
                    if echo_status == 200:
                        self._send(200, {"id": "chatcmpl-echo", "object": "chat.completion", "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})
                    else:
                        self._send(echo_status, {"error": {"message": text, "type": "scripted"}})
                    return
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                if number in server._raw:
                    raw_body, raw_status, raw_headers = server._raw[number]
                    self._send_bytes(raw_status, raw_body, raw_headers)
                    return
                failure = server._planned_failure(number)
                if failure is not None:
                    status, headers = failure
                    if status == "stall":
                        server._stopping.wait(30)
                        self.close_connection = True
                        return
                    if status == "drop":
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    message = f"scripted failure {status}"
                    if status == 401 and server.echo_key_on_401:
                        message = f"Invalid API Key: {auth}"  # a careless server echoing the credential
                    self._send(status, {"error": {"message": message, "type": "scripted"}}, headers)
                    return
                if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                    self._send(400, {"error": {"message": "expected a JSON body with messages",
                                               "type": "invalid_request"}})
                    return
                prompt = str(body["messages"][-1].get("content", ""))
                seed = body.get("seed")
                requested_n = int(body.get("n") or 1)
                if server.flavour == "llamacpp" and requested_n != 1:
                    self._send(500, {"error": {"code": 500, "message": "Only one completion choice is allowed",
                                               "type": "server_error"}})
                    return
                n = requested_n if server.honour_n else 1
                tail = "\n" if server.trailing_newline else ""
                choices = []
                for i in range(n):
                    message: dict[str, Any] = {
                        "role": "assistant",
                        "content": fake_completion(prompt, None if seed is None else seed + i) + tail,
                    }
                    choice: dict[str, Any] = {"index": i, "message": message, "finish_reason": "stop", "logprobs": None}
                    if server.flavour == "vllm":
                        message.update({"reasoning_content": None, "tool_calls": []})
                        choice["stop_reason"] = None
                    choices.append(choice)
                answer: dict[str, Any] = {
                    "id": f"chatcmpl-fake-{number}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", "fake"),
                    "choices": choices,
                    "usage": {"prompt_tokens": 1, "completion_tokens": n, "total_tokens": 1 + n},
                }
                if server.flavour == "vllm":
                    answer.update({"prompt_logprobs": None, "kv_transfer_params": None})
                elif server.flavour == "ollama":
                    answer["system_fingerprint"] = "fp_ollama"
                elif server.flavour == "llamacpp":
                    answer["system_fingerprint"] = "b4500-fake"
                    answer["timings"] = {"prompt_n": 1, "prompt_ms": 0.5, "prompt_per_token_ms": 0.5,
                                         "prompt_per_second": 2000.0, "predicted_n": 1, "predicted_ms": 1.0,
                                         "predicted_per_token_ms": 1.0, "predicted_per_second": 1000.0}
                self._send(200, answer)

        return Handler
