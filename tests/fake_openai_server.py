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
                self._send_bytes(status, json.dumps(payload).encode("utf-8"), {"Content-Type": "application/json", **(headers or {})})

            def _send_bytes(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
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
                    self._send(400, {"error": {"message": "expected a JSON body with messages", "type": "invalid_request"}})
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
                    message: dict[str, Any] = {"role": "assistant",
                                               "content": fake_completion(prompt, None if seed is None else seed + i) + tail}
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
