"""Real-model rollouts: sample completions for a dataset from an OpenAI-compatible chat endpoint.

This is the one tool in the course that talks to a network. It turns a dataset
(``{"id", "prompt", "expected_answer"}`` lines) into rollouts in the course's own
formats, so ``course.eval``, ``course.selection_demo`` and ``course.gate`` treat a real
model exactly like the bundled frozen rollouts::

    # Groq (the default endpoint): put GROQ_API_KEY=... in .env or the environment
    python -m course.rollout_sample --dataset data/datasets/math_dev.jsonl \\
        --model llama-3.1-8b-instant --out runs/groq_dev.jsonl
    python -m course.eval --dataset data/datasets/math_dev.jsonl --completions runs/groq_dev.jsonl

    # a local vLLM / Ollama / llama.cpp server that accepts any key
    python -m course.rollout_sample --base-url http://127.0.0.1:8000/v1 --api-key-env NONE \\
        --dataset data/datasets/math_dev.jsonl --model Qwen/Qwen2.5-0.5B-Instruct --n 8 --out runs/qwen_pack.jsonl
    python -m course.selection_demo --dataset data/datasets/math_dev.jsonl --samples runs/qwen_pack.jsonl --n 4

What it writes (one line per dataset item, in dataset order, flushed after each item):
  * ``--n 1``: the frozen-rollouts shape ``{"id", "completion", "policy", "sampling"}``;
  * ``--n N > 1``: the selection-pack shape ``{"id", "samples": [{"sample_index", "completion"}, ...],
    "policy", "sampling"}``;
  * on every line, ``item_sha256``: the fingerprint of the dataset item it answers (id, prompt,
    expected_answer), which resuming checks (readers ignore it).

``policy`` is ``"<model>@<host[:port]>"`` (the model as given, at the endpoint's host):
the same model name served by Groq and by a local quantised server is not the same
policy, and the label stays identical from run to run. ``--policy`` overrides it.

``sampling`` records how ONE sample is drawn: temperature, top_p, max_tokens, seed,
``system_prompt_sha256`` when a system prompt is used, and ``{"n_strategy": "native",
"n": N}`` when the samples were drawn jointly. The number of samples per item is
deliberately not in it: that is selection compute, which the file shows (the length
of ``samples``) and ``course.gate`` locks as ``selection.n``. So a frozen file and a
pack sampled with the same settings carry the same ``sampling`` (as the bundled files
do), sample 0 of the pack is the very request the frozen file made, and the gate
accepts "eval of the frozen file vs. best-of-1 of the pack" as a fair comparison.

Decisions a careful reader should know about:
  * The key. ``--api-key-env NAME`` (default ``GROQ_API_KEY``) names the variable; the
    real environment wins (an empty variable counts as unset), then a ``.env`` file
    in the current directory (``course.lib.external.dotenv``; it never changes ``os.environ``).
    ``--api-key-env NONE`` sends the placeholder key ``no-key`` for local servers that
    ignore keys. Without a key: one error line naming the variable and the ``.env``
    option, exit 2, nothing written. A key holding anything but printable ASCII (a
    non-ASCII letter, a space, NUL, a newline, any control character) is refused before
    any request, naming the kind of character and its position, never the key. The key
    is never written or printed: whatever the server sends is redacted before it is shown
    or written, and the key is found in any letter case, split by whitespace or invisible
    characters, and in pieces of half its length or more (``course.lib.external.redaction``). A reply
    whose completion gives the key away is written with ``[redacted]`` in its place (stderr
    says which item), so it reaches no rollout, result, summary or report. A key shorter than
    8 characters (a local server's placeholder such as ``EMPTY``) is not redacted, since that
    would blank out ordinary letters, and the tool says so.
  * n > 1. Groq (and others) refuse or ignore the ``n`` parameter, so by default
    (``--n-strategy separate``) sample ``i`` is its own request with ``n=1`` and
    seed ``seed + i``: sample ``i`` is the same draw whatever ``--n`` is, and sample 0
    is the ``--n 1`` request. This works on every server. ``--n-strategy native``
    sends one request with ``n`` (fewer round trips on vLLM, which honours ``n``) and
    records itself in ``sampling`` because jointly drawn samples are other draws. A
    server that answers with another number of choices (Ollama ignores ``n`` and
    returns one) stops the run with exit 2 naming the item: padding or re-requesting
    would silently turn the run into another sampling scheme than the one recorded.
    llama.cpp's server answers ``n > 1`` with HTTP 500 (retried like any 5xx, then
    exit 1 with the hint to use ``--n-strategy separate``).
  * What a server answers. The body of a 200 answer is parsed and checked here
    (``parse_chat_completion``), not by the SDK, which accepts wrong shapes: a
    non-JSON or truncated body, ``choices`` that is not a list of objects with a
    ``message`` holding a string ``content``, or the wrong number of choices stops
    the run with exit 2, the item id, what is wrong and the first 200 characters of
    the body. ``content: null`` is valid OpenAI (a refusal; a reasoning model that
    spent its budget) and is recorded as ``""``: no answer, scored 0. Text is
    recorded verbatim (llama.cpp may end it with a newline; the scorer judges).
    Extra fields (vLLM's ``stop_reason``, llama.cpp's ``timings``, Ollama's
    ``system_fingerprint``) are ignored. Anything from the server that reaches the
    terminal is cut to 200 characters and escaped with ``course.lib.visible``.
  * Bounds. ``--timeout`` is the whole request, from connecting to the last byte of the
    answer: the SDK's own timeout is per read, so a server trickling a byte every half second
    would hold a 2 s timeout for minutes. Each request runs under that deadline
    (``chat_endpoint.Endpoint``); past it the connection is dropped and the request counts
    as timed out (retried like one). An answer larger than 8 MiB plus 1 KiB per requested
    token (n x max_tokens) is no completion of the request: it is refused as it arrives,
    before it is in memory, and the run stops (exit 2).
  * Failures. 408, 409, 429, 5xx, timeouts and dropped connections are retried up
    to ``--max-retries`` times, waiting ``--backoff * 2**attempt`` seconds (no
    jitter: one sequential client cannot stampede, and the schedule stays
    reproducible), or what a ``Retry-After`` / ``retry-after-ms`` header asks when
    present (a server asking for more than 120 s, e.g. a used-up daily quota, is not
    waited for). The SDK's own retries are switched off so this policy is the only
    one. When an item still fails the run STOPS (exit 1) with the item id and HTTP
    status; it does not write an empty completion, because ``course.eval`` would
    score an outage as a model failure. Other statuses (400, 404, 422: a wrong model
    name or parameter) are not retried and exit 2, as does a rejected key (401/403).
    Everything finished so far stays in the file; rerunning the same command resumes.
    Ctrl-C stops with 130; a closed output pipe (``2>&1 | head -2``) stops the run like
    SIGPIPE stops any Unix tool, with exit 141: never 0, since not every item was sampled.
  * The output file. ``--out`` is checked before any request: a directory, FIFO,
    device, socket, dangling link or unwritable place is refused (exit 2). Each line
    is one ``os.write`` on an append-only descriptor followed by ``fsync``, so a kill
    leaves whole lines plus at most one newline-less fragment; a write that fails
    part-way (disk full) is cut back to the last whole line and reported in one line
    (exit 2). Nothing touches the file before the first new item is ready.
  * Resume. An existing ``--out`` is validated first: every complete line must carry
    this run's policy and sampling, the ids must be the dataset's first ids in
    order, and each line's ``item_sha256`` must be its item's as the dataset holds it now
    (a prompt or expected answer edited since would otherwise keep a completion of the old
    prompt; a line without one cannot be checked and is refused the same way). Those items are skipped and the
    rest appended; an id is never written twice. A last line without its newline is a write the interruption cut short:
    the tool says so, drops it and samples that item again. A damaged complete line
    is not guessed at (exit 2, ``path:line``). Different settings: exit 2, unless
    ``--force``, which starts the file over: only a file whose first line this tool
    wrote (a foreign file is refused), and only by renaming a new file into place
    once it holds its first item.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from course.cli import (
    EXIT_FAIL,
    EXIT_OK,
    EXIT_USAGE,
    MAX_SEED,
    float_in,
    info,
    int_in,
    make_parser,
    output_closed,
    positive_int,
    run,
)
from course.errors import CourseError
from course.lib.external.chat_endpoint import (
    DEFAULT_BASE_URL,
    DEFAULT_KEY_ENV,
    OPENAI_MISSING,
    Endpoint,
    LineAppender,
    SamplingStopped,
    chat_messages,
    check_api_key,
    item_fingerprint,
    plan_output,
    policy_name,
    request_plan,
    resolve_api_key,
    rollout_record,
    sample_item,
    sampling_settings,
    short_key_warning,
)
from course.lib.records.formats import read_dataset
from course.lib.records.jsonl import dumps_line
from course.lib.records.manifest import refuse_credentials
from course.lib.visible import command, dumps_safe, terminal_line, visible

# ---------------------------------------------------------------------------
# The CLI: check everything, then sample item by item, appending and flushing.
# ---------------------------------------------------------------------------
EXAMPLE = """\
  # Groq: GROQ_API_KEY=gsk_... in the environment or in ./.env
  python -m course.rollout_sample --dataset data/datasets/math_dev.jsonl \\
      --model llama-3.1-8b-instant --out runs/groq_dev.jsonl
  python -m course.eval --dataset data/datasets/math_dev.jsonl --completions runs/groq_dev.jsonl

  # 8 samples per prompt (a selection pack) from a local vLLM server that needs no key
  python -m course.rollout_sample --base-url http://127.0.0.1:8000/v1 --api-key-env NONE \\
      --dataset data/datasets/math_dev.jsonl --model Qwen/Qwen2.5-0.5B-Instruct --n 8 --out runs/qwen_pack.jsonl

  Interrupted? Run the same command again: finished items are kept, the rest is appended."""


def _build_parser() -> Any:

    p = make_parser(
        "python -m course.rollout_sample",
        "Sample completions for every dataset prompt from an OpenAI-compatible chat endpoint and write them "
        "as frozen rollouts (--n 1) or a selection pack (--n > 1), with the policy and sampling settings on "
        "every line. Progress goes to stderr; the key is never written or printed.",
        EXAMPLE,
    )
    p.add_argument("--dataset", required=True, metavar="FILE",
                   help="dataset JSONL: {id, prompt, expected_answer} per line")
    p.add_argument("--model", required=True, metavar="NAME", help="model name as the endpoint knows it")
    p.add_argument("--out", required=True, metavar="FILE",
                   help="output JSONL; an existing file with the same settings is resumed")
    p.add_argument("--n", type=int_in(1, 128), default=1,
                   help="samples per prompt, at most 128 (default 1: frozen-rollouts shape)")
    p.add_argument("--temperature", type=float_in(0.0, 100.0), default=0.8, metavar="T",
                   help="sampling temperature (default 0.8)")
    p.add_argument("--top-p", type=float_in(0.0, 1.0, low_open=True), default=1.0, metavar="P",
                   help="nucleus mass, in (0, 1] (default 1.0)")
    p.add_argument("--max-tokens", type=int_in(1, 1_000_000), default=64, metavar="K",
                   help="completion budget per sample (default 64)")
    p.add_argument("--seed", type=int_in(-MAX_SEED - 1, MAX_SEED - 128), default=1234, metavar="S",
                   help="request seed, a 64-bit integer; sample i of --n uses seed+i (default 1234)")
    p.add_argument("--n-strategy", choices=("separate", "native"), default="separate",
                   help="n > 1 as n requests with seeds seed+i (default; works everywhere, Groq included) "
                        "or one request with n (vLLM, OpenAI)")
    p.add_argument("--system-prompt", default=None, metavar="TEXT",
                   help="optional system message (its sha256 is recorded)")
    p.add_argument("--base-url", default=DEFAULT_BASE_URL, metavar="URL",
                   help=f"OpenAI-compatible API root (default {DEFAULT_BASE_URL})")
    p.add_argument("--api-key-env", default=DEFAULT_KEY_ENV, metavar="NAME",
                   help=f"environment variable (or ./.env entry) holding the key (default {DEFAULT_KEY_ENV}); "
                        f"NONE sends a placeholder key to local servers that need none")
    p.add_argument("--policy", default=None, metavar="LABEL",
                   help="label recorded as policy (default MODEL@HOST[:PORT])")
    p.add_argument("--limit", type=positive_int, default=None, metavar="K", help="only the first K dataset items")
    p.add_argument("--max-retries", type=int_in(0, 100), default=5, metavar="R",
                   help="retries per request on 408/409/429/5xx/connection errors (default 5)")
    p.add_argument("--backoff", type=float_in(0.0, 3600.0), default=1.0, metavar="SEC",
                   help="first retry wait in seconds, doubled each retry, unless Retry-After says otherwise "
                        "(default 1.0)")
    p.add_argument("--timeout", type=float_in(0.0, 86400.0), default=60.0, metavar="SEC",
                   help="total seconds per HTTP request, from connecting to the answer's last byte (default 60)")
    p.add_argument("--force", action="store_true", help="start --out over even if it holds other settings")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(args_in: Sequence[str] | None) -> int:
    args = _build_parser().parse_args(args_in)
    if args.timeout <= 0:
        raise CourseError("--timeout: expected a positive number of seconds")

    # --- everything that can be wrong is checked before the first request ---
    all_examples = read_dataset(args.dataset)  # the project's validated reader: path:line errors, exit 2
    examples = all_examples if args.limit is None else all_examples[: args.limit]
    policy = args.policy if args.policy is not None else policy_name(args.model, args.base_url)
    sampling = sampling_settings(
        temperature=args.temperature, top_p=args.top_p, max_tokens=args.max_tokens, seed=args.seed,
        n=args.n, n_strategy=args.n_strategy, system_prompt=args.system_prompt,
    )
    # Both go on every line and into every manifest made from them: the rule every manifest is held to.
    refuse_credentials(policy, sampling, where="--policy:", fix="Name the policy without it")
    key, key_source = resolve_api_key(args.api_key_env, os.environ)
    check_api_key(key, key_source)
    fingerprints = {ex.id: item_fingerprint(ex.id, ex.prompt, ex.expected_answer) for ex in all_examples}

    out = Path(args.out)
    resume = plan_output(out, args.dataset, [ex.id for ex in all_examples], policy, sampling, args.n, force=args.force,
                         fingerprints=[fingerprints[ex.id] for ex in all_examples])
    exists, done, keep_bytes, start_over = resume.exists, set(resume.done_ids), resume.keep_bytes, resume.start_over
    notes = [f"{visible(str(out))}: the last line ({resume.torn_bytes} bytes without a newline) was cut off by an "
             f"interruption; it will be dropped and item {len(done) + 1} sampled again"] if resume.torn_bytes else []
    todo = [ex for ex in examples if ex.id not in done]
    already = len(examples) - len(todo)  # of this run's items (a longer file may hold more)
    if not todo:
        print(f"{visible(str(out))}: nothing to do, all {len(examples)} items are already there ({visible(policy)})")
        return EXIT_OK

    try:
        import openai
    except ImportError:
        raise CourseError(OPENAI_MISSING) from None
    endpoint = Endpoint(openai, api_key=key, base_url=args.base_url, timeout=args.timeout)
    plan = request_plan(args.n, args.seed, args.n_strategy)
    warning = short_key_warning(key, key_source)
    notes += [warning] if warning is not None else []

    written = 0
    appender = LineAppender(out, start_over=start_over, keep_bytes=keep_bytes)
    try:  # from the first line of progress on: a closed pipe here is an interruption, never a success
        for note in notes:
            info(note)
        info(f"sampling {len(todo)} of {len(examples)} items ({already} already in {visible(str(out))}) "
             f"from {visible(policy)}: n={args.n}, {len(plan)} request(s) per item, key: {key_source}")
        for k, ex in enumerate(todo, start=1):
            started = time.monotonic()
            base_request = {
                "model": args.model,
                "messages": chat_messages(ex.prompt, args.system_prompt),
                "temperature": args.temperature,
                "top_p": args.top_p,
                "max_tokens": args.max_tokens,
            }
            completions, requests = sample_item(
                endpoint.request, openai, item_id=ex.id, base_request=base_request,
                plan=plan, max_retries=args.max_retries, backoff=args.backoff, key=key, log=info,
            )
            appender.append(dumps_line(rollout_record(ex.id, completions, policy, sampling, fingerprints[ex.id])))
            written += 1
            info(f"[{already + k}/{len(examples)}] {visible(ex.id, limit=80)}: {len(completions)} sample(s), "
                 f"{requests} request(s), {time.monotonic() - started:.1f} s")
    except SamplingStopped as stop:
        kept = len(done) + written
        where = (
            f"{visible(str(out))} keeps {kept} finished item(s); run the same command again to resume" if kept
            else "nothing was written"
        )
        print(f"error: {terminal_line(f'stopped at {stop}. {where}')}", file=sys.stderr)
        return EXIT_USAGE if stop.exit_code == 2 else EXIT_FAIL
    except BrokenPipeError:
        # Whoever read our output went away (`2>&1 | head -2`): like SIGPIPE for any Unix tool, the run
        # stops -- it must not carry on unseen, nor end with 0 as if every item were sampled. The file
        # keeps its whole lines; the same command resumes.
        return output_closed(f"interrupted: the output pipe closed; {visible(str(out))} "
                             f"keeps {len(done) + written} finished "
                             f"item(s); run the same command again to resume")
    except OSError as exc:
        # Disk full, read-only file system, a path gone away: one line, and the file holds whole lines only.
        kept = written + (0 if start_over else len(done))
        shown = visible(str(out))
        where = (f"{shown} keeps {kept} finished item(s), all whole lines; fix the cause and run the same command "
                 f"again to resume" if kept else f"{shown} was not changed" if exists else "nothing was written")
        name = visible(str(exc.filename if exc.filename is not None else out))
        print(f"error: cannot write {name} ({exc.strerror or type(exc).__name__}); {where}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"interrupted: {visible(str(out))} keeps {len(done) + written} finished item(s); "
              "run the same command again to resume",
              file=sys.stderr)
        return 130
    finally:
        appender.close()
        endpoint.close()

    print(f"wrote {visible(str(out))}: {already + written} items ({written} sampled now, {already} kept from before)")
    print(f"policy: {visible(policy)}")
    # dumps_line's bytes, terminal-safe (--system-prompt is in it)
    print(f"sampling: {dumps_safe(sampling, sort_keys=True)}")
    print("next: " + command(
        ["python", "-m", "course.eval", "--dataset", args.dataset, "--completions", out] if args.n == 1 else
        ["python", "-m", "course.selection_demo", "--dataset", args.dataset, "--samples", out, "--n", str(args.n)]
    ))
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
