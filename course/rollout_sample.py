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

What it decides and why (the key and its redaction, n > 1, what a server answers, the bounds,
failures and retries, the output file, resuming) is docs/sampling.md, "What course.rollout_sample
decides".
"""

from __future__ import annotations

import argparse
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


def _sample(endpoint: Endpoint, openai: Any, args: argparse.Namespace, ex: Any, plan: Any,
            key: str) -> tuple[list[str], int]:
    """One item's completions (and the requests they took), under the run's retry policy."""
    base_request = {
        "model": args.model,
        "messages": chat_messages(ex.prompt, args.system_prompt),
        "temperature": args.temperature,
        "top_p": args.top_p,
        "max_tokens": args.max_tokens,
    }
    return sample_item(
        endpoint.request, openai, item_id=ex.id, base_request=base_request,
        plan=plan, max_retries=args.max_retries, backoff=args.backoff, key=key, log=info,
    )


def _write_failed(exc: OSError, out: Path, *, kept: int, existed: bool) -> int:
    """Disk full, read-only file system, a path gone away: one line, and the file holds whole lines only."""
    shown = visible(str(out))
    where = (f"{shown} keeps {kept} finished item(s), all whole lines; fix the cause and run the same command "
             f"again to resume" if kept else f"{shown} was not changed" if existed else "nothing was written")
    name = visible(str(exc.filename if exc.filename is not None else out))
    print(f"error: cannot write {name} ({exc.strerror or type(exc).__name__}); {where}", file=sys.stderr)
    return EXIT_USAGE


def _print_done(args: argparse.Namespace, out: Path, policy: str, sampling: dict[str, Any], already: int,
                written: int) -> None:
    """What was written, its policy and sampling, and the command that scores it."""
    print(f"wrote {visible(str(out))}: {already + written} items ({written} sampled now, {already} kept from before)")
    print(f"policy: {visible(policy)}")
    # dumps_line's bytes, terminal-safe (--system-prompt is in it)
    print(f"sampling: {dumps_safe(sampling, sort_keys=True)}")
    print("next: " + command(
        ["python", "-m", "course.eval", "--dataset", args.dataset, "--completions", out] if args.n == 1 else
        ["python", "-m", "course.selection_demo", "--dataset", args.dataset, "--samples", out, "--n", str(args.n)]
    ))


def _policy_and_sampling(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The policy name and sampling settings every line records, refused if they hold a credential."""
    policy = args.policy if args.policy is not None else policy_name(args.model, args.base_url)
    sampling = sampling_settings(
        temperature=args.temperature, top_p=args.top_p, max_tokens=args.max_tokens, seed=args.seed,
        n=args.n, n_strategy=args.n_strategy, system_prompt=args.system_prompt,
    )
    # Both go on every line and into every manifest made from them: the rule every manifest is held to.
    refuse_credentials(policy, sampling, where="--policy:", fix="Name the policy without it")
    return policy, sampling


def _main(args_in: Sequence[str] | None) -> int:
    args = _build_parser().parse_args(args_in)
    if args.timeout <= 0:
        raise CourseError("--timeout: expected a positive number of seconds")

    # --- everything that can be wrong is checked before the first request ---
    all_examples = read_dataset(args.dataset)  # the project's validated reader: path:line errors, exit 2
    examples = all_examples if args.limit is None else all_examples[: args.limit]
    policy, sampling = _policy_and_sampling(args)
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
            completions, requests = _sample(endpoint, openai, args, ex, plan, key)
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
        return _write_failed(exc, out, kept=written + (0 if start_over else len(done)), existed=exists)
    except KeyboardInterrupt:
        print(f"interrupted: {visible(str(out))} keeps {len(done) + written} finished item(s); "
              "run the same command again to resume",
              file=sys.stderr)
        return 130
    finally:
        appender.close()
        endpoint.close()

    _print_done(args, out, policy, sampling, already, written)
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
