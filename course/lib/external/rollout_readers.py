"""Readers of outside model outputs: plain JSONL, lm-evaluation-harness samples, inspect_ai logs.

This module owns turning what another tool wrote into frozen-rollouts lines
(``{"id", "completion", "policy", "sampling"}``, docs/formats.md) without inventing the
policy or the sampling: ``read_plain`` (both stated by the user), ``read_lm_eval`` (the raw
generation and the recorded ``gen_kwargs``, seeds and model), ``read_inspect`` (the log's
model and generate config), each with the prompts the source logged, recorded as the lines'
``prompt_template`` (``course.lib.external.prompt_records``), ``order_and_check`` (ids and recorded targets against a
course dataset, dataset order), ``render`` and ``import_completions`` (all of it, checked
before anything is written). ``python -m course.import_completions`` is the tool: it parses
the options, writes the file atomically and prints ``import_summary``.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from course.errors import CourseError, foreign_reader
from course.lib.external.messages import output_text
from course.lib.external.prompt_records import chat_prompt, lm_eval_context, rendered_record, stated_record
from course.lib.external.redaction import public_args_text, public_settings, without_key_shapes, without_url_credentials
from course.lib.records.formats import read_dataset
from course.lib.records.jsonl import dumps_line, iter_objects, loads_document, open_input, read_json
from course.lib.visible import dumps_safe, visible

LOG_LIMIT = 2 << 30  # bytes: an inspect log (a zip of JSON) larger than this is not read


@dataclass(frozen=True)
class Row:
    """One imported completion, with where it came from (for messages)."""

    where: str
    id: str
    completion: str
    target: str | None = None  # what the source recorded as the answer, when it did
    more: tuple[str, ...] = ()  # samples 1..n-1 when the source holds several (lm-eval repeats, inspect epochs)

    @property
    def samples(self) -> tuple[str, ...]:
        """Every sample of the item, in the source's order (sample 0 is ``completion``)."""
        return (self.completion, *self.more)


@dataclass(frozen=True)
class Imported:
    rows: tuple[Row, ...]
    policy: str
    sampling: dict[str, Any]
    # What the source recorded but the output leaves out because it may carry a credential
    # (``extra_headers``, ``extra_body.api_key``, ``model_args.token``): named, never shown.
    withheld: tuple[str, ...] = ()
    # What the policy was shown (a Locked Room field): the sha256 of the prompts the source logged, or the
    # course template the user stated; None when a plain file states neither.
    prompt_template: dict[str, str] | None = None


# ---------------------------------------------------------------------------
# Stated settings (plain format, and overrides)
# ---------------------------------------------------------------------------
def parse_sampling(text: str) -> dict[str, Any]:
    """``--sampling`` must be a JSON object of finite values.

    >>> parse_sampling('{"temperature": 0.7, "max_tokens": 32}')
    {'temperature': 0.7, 'max_tokens': 32}
    """
    if not text.lstrip().startswith("{"):
        raise CourseError("--sampling: must be a JSON object, e.g. '{\"temperature\": 0.7, \"max_tokens\": 32}'")
    # The reader's own rules (course.lib.records.jsonl): no NaN/Infinity/1e999, at most MAX_DEPTH levels,
    # no lone surrogate, no repeated key; so what is written is what every reader accepts.
    return loads_document(text, "--sampling", "sampling")


def _finite(value: Any) -> Any:
    """JSON-safe copy: tuples become lists, non-finite floats are refused (they cannot be compared)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise CourseError(f"a recorded sampling value is {value}, which JSON cannot hold")
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


# ---------------------------------------------------------------------------
# Readers, one per source
# ---------------------------------------------------------------------------
def read_plain(path: str, policy: str | None, sampling: str | None, template: str | None = None) -> Imported:
    if not policy or sampling is None:
        raise CourseError(
            "--format plain records neither the model nor its settings: state them with "
            "--policy NAME and --sampling JSON (they are never guessed)"
        )
    rows = []
    seen: dict[str, int] = {}
    prompts: list[tuple[str, Any]] = []
    for lineno, obj in iter_objects(path):
        where = f"{path}:{lineno}"
        ident, text = obj.get("id"), obj.get("completion")
        if not isinstance(ident, str) or not ident:
            raise CourseError(f"{where}: missing field 'id' (a non-empty string)")
        if not isinstance(text, str):
            raise CourseError(f"{where}: missing field 'completion' (a string)")
        if ident in seen:
            raise CourseError(f"{where}: duplicate id {ident!r} (first on line {seen[ident]})")
        seen[ident] = lineno
        rows.append(Row(where, ident, text))
        _plain_prompt(obj, where, ident, prompts, lineno == 1)
    return Imported(tuple(rows), policy, parse_sampling(sampling),
                    prompt_template=_plain_template(path, prompts, template))


def _plain_prompt(obj: dict[str, Any], where: str, ident: str, prompts: list[tuple[str, Any]], first: bool) -> None:
    """Collect a plain line's optional ``prompt`` (the text or the messages sent): on every line or on none."""
    if "prompt" not in obj:
        if prompts:
            raise CourseError(f"{where}: no field 'prompt', which line 1 has: the prompt goes on every line or on none")
        return
    prompt = obj["prompt"]
    if isinstance(prompt, list) and all(isinstance(m, dict) for m in prompt):
        prompt = chat_prompt(prompt)
    elif not isinstance(prompt, str):
        raise CourseError(f"{where}: field 'prompt' must be the text sent or a list of {{role, content}} messages")
    if not first and not prompts:
        raise CourseError(f"{where}: field 'prompt', which line 1 lacks: the prompt goes on every line or on none")
    prompts.append((ident, prompt))


def _plain_template(path: str, prompts: list[tuple[str, Any]], template: str | None) -> dict[str, str] | None:
    if prompts and template is not None:
        raise CourseError(f"{path}: the lines carry the prompts they were sampled with; --prompt-template would "
                          "state it a second time (drop one)")
    if prompts:
        return rendered_record(prompts)
    return None if template is None else stated_record(template)


def _lm_eval_gen_kwargs(obj: dict[str, Any], where: str) -> dict[str, Any]:
    """The generation settings of one lm-eval sample line (``arguments.gen_args_0.arg_1``)."""
    args = obj.get("arguments")
    if isinstance(args, dict):  # written by EvaluationTracker: {"gen_args_0": {"arg_0": ctx, "arg_1": kwargs}}
        first = args.get("gen_args_0")
        kwargs = first.get("arg_1") if isinstance(first, dict) else None
    elif isinstance(args, list) and args and isinstance(args[0], (list, tuple)) and len(args[0]) > 1:
        kwargs = args[0][1]  # the in-memory form: [(context, gen_kwargs)]
    else:
        raise CourseError(f"{where}: missing field 'arguments' with the request's (context, gen_kwargs)")
    if not isinstance(kwargs, dict):
        raise CourseError(
            f"{where}: the request has no generation settings (arguments.gen_args_0.arg_1 is not an object): "
            "this is a loglikelihood task, not a generate_until task; only generations can be scored"
        )
    return kwargs


def read_lm_eval(path: str, results: str | None, policy: str | None, id_field: str) -> Imported:
    rows: list[Row] = []
    gen_kwargs: dict[str, Any] | None = None
    first_filter: Any = None
    seen: dict[str, str] = {}
    contexts: list[tuple[str, str]] = []  # what lm-eval sent for each document: its prompt, as rendered
    for lineno, obj in iter_objects(path):
        where = f"{path}:{lineno}"
        for name in ("doc_id", "doc", "resps"):
            if name not in obj:
                raise CourseError(f"{where}: missing field '{name}' (not an lm-eval --log_samples line)")
        if first_filter is None:
            first_filter = obj.get("filter")
        if obj.get("filter") != first_filter:
            continue  # the same generation again under another filter: the raw text is identical
        doc = obj["doc"]
        if not isinstance(doc, dict) or not isinstance(doc.get(id_field), str) or not doc[id_field]:
            raise CourseError(
                f"{where}: the document has no string field '{id_field}': this log is of a task over another "
                f"dataset (course datasets carry an 'id'; --id-field names another column)"
            )
        kwargs = _lm_eval_gen_kwargs(obj, where)
        if gen_kwargs is None:
            gen_kwargs = kwargs
        elif kwargs != gen_kwargs:
            raise CourseError(f"{where}: gen_kwargs differ from line 1 ({without_key_shapes(str(kwargs))} vs "
                              f"{without_key_shapes(str(gen_kwargs))}); one file, one sampling")
        resps = obj["resps"]
        if not (isinstance(resps, list) and len(resps) == 1 and isinstance(resps[0], list) and resps[0]):
            raise CourseError(f"{where}: 'resps' must hold one request's generations ([[text, ...]])")
        texts = resps[0]  # one generation per repeat (repeats > 1: several samples of the item, in order)
        if not all(isinstance(t, str) for t in texts):
            raise CourseError(f"{where}: a generation is not text")
        ident = doc[id_field]
        if ident in seen:
            raise CourseError(f"{where}: duplicate document id {ident!r} (first on {seen[ident]})")
        seen[ident] = where
        contexts.append((ident, lm_eval_context(obj, where)))
        target = obj.get("target")
        rows.append(Row(where, ident, texts[0], None if target is None else str(target).strip(), tuple(texts[1:])))
    if not rows:
        raise CourseError(f"{path}: no samples")
    sampling: dict[str, Any] = {"gen_kwargs": _finite(gen_kwargs)}
    recorded_policy = None
    withheld: list[str] = []
    if results:
        res = read_json(results, "lm-eval results file")
        config = res.get("config")
        if not isinstance(config, dict) or "model" not in config:
            raise CourseError(f"{results}: no 'config.model' (not an lm-eval results_*.json)")
        model_args, withheld = _public_model_args(config.get("model_args"))
        recorded_policy = f"lm-eval:{config['model']}" + (f":{model_args}" if model_args else "")
        for key in ("random_seed", "numpy_seed", "torch_seed", "fewshot_seed"):
            if key in config:
                sampling[key] = config[key]
    chosen = policy or recorded_policy
    if not chosen:
        raise CourseError(
            f"{path}: the samples file does not name the model: give --results (the results_*.json of the same run) "
            "or state it with --policy"
        )
    return Imported(
        tuple(rows), chosen, sampling, tuple(f"model_args.{name}" for name in withheld) if not policy else (),
        rendered_record(contexts),
    )


def public_model_args(model_args: Any) -> str:
    """lm-eval's ``model_args`` for a policy name, without the credentials they may carry.

    lm-eval records the arguments as given, ``"pretrained=org/m,token=hf_..."``, a JSON text or a
    dict, and its API models take ``api_key``/``token``/``headers``: a credential is not part of
    which model answered, and the policy name is written on every line and printed. What is left
    out is ``course.lib.external.redaction``'s rule (``public_args_text``, ``public_settings``): an
    argument whose name or value is a credential (numbers included: ``token=12345678901234``),
    every header and cookie, a credential inside a nested argument, a URL's password. The string
    form keeps its order (the policy names of logs without credentials do not change); a dict is
    sorted. ``model_args_withheld`` names what was left out.

    >>> public_model_args("pretrained=org/m,token=hf_SeCrEt,add_bos_token=True")
    'pretrained=org/m,add_bos_token=True'
    >>> public_model_args({"api_key": "sk-x", "model": "m", "base_url": "http://u:pw@h:8000/v1"})
    'base_url=http://h:8000/v1,model=m'
    """
    return _public_model_args(model_args)[0]


def model_args_withheld(model_args: Any) -> list[str]:
    """The names of the arguments ``public_model_args`` leaves out."""
    return _public_model_args(model_args)[1]


def _public_model_args(model_args: Any) -> tuple[str, list[str]]:
    if isinstance(model_args, dict):
        clean, withheld = public_settings(model_args)
        text = ",".join(f"{k}={v}" for k, v in sorted(clean.items(), key=lambda kv: str(kv[0])))
        return without_url_credentials(text), withheld
    if isinstance(model_args, str):
        return public_args_text(model_args)
    return ("" if not model_args else without_url_credentials(str(model_args))), []


def _inspect_log_path(path: str) -> Path:
    p = Path(path)
    if p.is_dir():
        logs = sorted(q for q in p.iterdir() if q.suffix in (".eval", ".json") and not q.name.startswith("."))
        if len(logs) != 1:
            raise CourseError(f"{path}: expected exactly one inspect log (.eval or .json) in the directory, "
                              f"found {len(logs)}")
        p = logs[0]
    elif not os.path.lexists(p):
        raise CourseError(f"{path}: no such file or directory")
    # inspect_ai opens the path itself: the one opener's rule is applied first (a FIFO named x.eval
    # would make it wait forever; a device would never end), and its size cap.
    with open_input(p, "an inspect eval log", limit=LOG_LIMIT):
        pass
    return p


def read_inspect(path: str, policy: str | None) -> Imported:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise CourseError("--format inspect needs the inspect extra: pip install -e '.[inspect]'") from None
    log_path = _inspect_log_path(path)
    with foreign_reader(log_path, "inspect eval log"):  # inspect raises several types for a file that is not a log
        log = read_eval_log(str(log_path))
    if log.status != "success":
        raise CourseError(f"{log_path}: the eval's status is {log.status!r}, not 'success' "
                          f"({without_key_shapes(log.error.message) if log.error else 'no error message'})")
    if not log.samples:
        raise CourseError(f"{log_path}: the log holds no samples (run inspect with --log-samples)")
    # With epochs > 1 inspect logs each sample once per epoch: one item, several samples (epoch 1 is sample 0).
    epochs: dict[str, dict[int, tuple[str, str, str | None]]] = {}
    prompts: dict[str, Any] = {}  # what each item was sent (epoch 1's, the same in every epoch)
    for k, s in enumerate(log.samples, start=1):
        where = f"{log_path}:sample {k}"
        if s.error is not None:
            raise CourseError(f"{where}: the sample ended with an error ({without_key_shapes(s.error.message)})")
        ident = str(s.id)
        if s.epoch in epochs.setdefault(ident, {}):
            raise CourseError(f"{where}: duplicate sample id {ident!r} (epoch {s.epoch})")
        target = s.target if isinstance(s.target, str) else (s.target[0] if s.target else None)
        epochs[ident][s.epoch] = (where, output_text(s.output), target)
        if s.epoch == 1 or ident not in prompts:
            prompts[ident] = _inspect_prompt(s)
    rows = []
    for ident, by_epoch in epochs.items():
        if sorted(by_epoch) != list(range(1, len(by_epoch) + 1)):
            missing = min(set(range(1, max(by_epoch) + 1)) - set(by_epoch))
            raise CourseError(f"{by_epoch[min(by_epoch)][0]}: sample {ident!r} has no epoch {missing} "
                              f"(epochs {sorted(by_epoch)}): every epoch of an item must be in the log")
        first = [by_epoch[e] for e in sorted(by_epoch)]
        rows.append(Row(first[0][0], ident, first[0][1], first[0][2], tuple(text for _, text, _ in first[1:])))
    sampling = _finite(log.eval.model_generate_config.model_dump(exclude_none=True))
    return Imported(tuple(rows), policy or f"inspect:{log.eval.model}", sampling,
                    prompt_template=rendered_record(prompts.items()))


def _inspect_prompt(sample: Any) -> list[dict[str, Any]]:
    """The messages an inspect sample sent the model: its conversation before the model's last reply
    (the solvers' system message and few-shot turns included)."""
    messages = list(getattr(sample, "messages", None) or [])
    while messages and getattr(messages[-1], "role", None) == "assistant":
        messages.pop()
    if not messages:  # a log written without messages: the sample's input is what was sent
        given = getattr(sample, "input", None)
        messages = [{"role": "user", "content": given}] if isinstance(given, str) else list(given or [])
    return chat_prompt(messages)


# ---------------------------------------------------------------------------
# Checks against a dataset, and the output
# ---------------------------------------------------------------------------
def order_and_check(imported: Imported, dataset: str | None) -> list[Row]:
    """Rows in dataset order (every id must be an item, every recorded target its answer)."""
    if dataset is None:
        return list(imported.rows)
    items = {ex.id: ex for ex in read_dataset(dataset)}
    for row in imported.rows:
        ex = items.get(row.id)
        if ex is None:
            raise CourseError(f"{row.where}: id {row.id!r} is not an item of {dataset} (a log of another task "
                              "or dataset?)")
        if row.target is not None and row.target != str(ex.expected_answer):
            raise CourseError(
                f"{row.where}: the recorded target {row.target[:40]!r} is not {ex.id}'s expected_answer "
                f"{ex.expected_answer} in {dataset}: this log is of another task or dataset"
            )
    position = {ident: i for i, ident in enumerate(items)}
    return sorted(imported.rows, key=lambda r: position[r.id])


def render(rows: Iterable[Row], policy: str, sampling: dict[str, Any],
           template: dict[str, str] | None = None) -> str:
    """Frozen rollouts: one completion per item (and the prompt template on every line, when known)."""
    extra = {} if template is None else {"prompt_template": template}
    return "".join(
        dumps_line({"id": r.id, "completion": r.completion, "policy": policy, "sampling": sampling, **extra}) + "\n"
        for r in rows
    )


def render_pack(rows: Iterable[Row], policy: str, sampling: dict[str, Any],
                template: dict[str, str] | None = None) -> str:
    """A selection pack (docs/formats.md): every sample of each item, numbered in the source's order."""
    extra = {} if template is None else {"prompt_template": template}
    return "".join(
        dumps_line({"id": r.id, "policy": policy, "sampling": sampling, **extra,
                    "samples": [{"completion": text, "sample_index": k} for k, text in enumerate(r.samples)]}) + "\n"
        for r in rows
    )


def one_per_item(rows: Iterable[Row]) -> None:
    """A frozen-rollouts file holds one completion per item: several are a pack, written with ``--pack``."""
    for row in rows:
        if row.more:
            raise CourseError(
                f"{row.where}: {len(row.samples)} samples of item {row.id!r} (lm-eval repeats or inspect epochs > 1): "
                f"frozen rollouts hold one per item; write them as a selection pack with --pack"
            )


def same_samples_per_item(rows: Sequence[Row]) -> None:
    """A selection pack imported holds the same number of samples for every item.

    An lm-eval run with ``repeats: 3`` whose samples file has 2 generations for one document, or an
    inspect log whose last epoch of one sample is missing, is a broken export, not a design: the
    multi-sample scoring refuses such a pack (``course.eval``: pass@1 pools the samples, and the
    gate's locked ``selection.n`` is one number), so it is refused here, where the source is at hand,
    naming the item, its count and the count of the others (the most common one).
    """
    sizes = Counter(len(row.samples) for row in rows)
    if len(sizes) <= 1:
        return
    usual = max(sizes, key=lambda n: (sizes[n], n))
    odd = next(row for row in rows if len(row.samples) != usual)
    others = sizes[usual]
    raise CourseError(
        f"{odd.where}: item {odd.id!r} has {len(odd.samples)} sample{'s' * (len(odd.samples) != 1)}, "
        f"{others} other item{'s' * (others != 1)} {'have' if others != 1 else 'has'} {usual} "
        f"(counts {', '.join(f'{n}: {sizes[n]} items' for n in sorted(sizes))}): a selection pack holds the "
        "same number of samples for every item (course.eval scores no other); re-run the missing samples, "
        "or leave the item out of the source"
    )


def import_completions(fmt: str, source: str, *, policy: str | None, sampling: str | None, results: str | None,
                       id_field: str, dataset: str | None, pack: bool = False,
                       prompt_template: str | None = None) -> tuple[Imported, list[Row]]:
    """Read ``source`` in format ``fmt`` (plain, lm-eval, inspect) and check it against ``dataset``.

    Returns what was read and its rows in output order; every check runs before anything is written.
    Without ``pack`` (frozen rollouts) an item with several samples is refused (``one_per_item``); with it,
    items with different numbers of samples (``same_samples_per_item``).
    """
    if fmt != "plain" and sampling is not None:
        raise CourseError(f"--sampling: the {fmt} source records its own sampling settings; it is not overridden")
    if fmt != "plain" and prompt_template is not None:
        raise CourseError(f"--prompt-template: the {fmt} source records the prompts it sent; they are not overridden")
    if fmt == "plain":
        imported = read_plain(source, policy, sampling, prompt_template)
    elif fmt == "lm-eval":
        imported = read_lm_eval(source, results, policy, id_field)
    else:
        imported = read_inspect(source, policy)
    if not pack:
        one_per_item(imported.rows)
    else:
        same_samples_per_item(imported.rows)
    imported = without_credentials(imported)
    return imported, order_and_check(imported, dataset)


def without_credentials(imported: Imported) -> Imported:
    """``imported`` with nothing in its policy or sampling that may carry a credential.

    Every line of the output repeats both, ``course.eval`` copies them into manifest.json and
    summary.md, and the tool prints them: a source's request headers (``extra_headers``:
    ``Authorization: Bearer ...``), the strings of its request body (``extra_body.api_key``) or a
    token among a model's arguments would be published with every result. They say nothing about
    how the completions were sampled; what is left out is named (``withheld``), never shown.
    """
    sampling, from_sampling = public_settings(imported.sampling)
    policy, from_policy = public_args_text(imported.policy)
    if not policy.strip():
        raise CourseError("the policy name (recorded by the source, or given) is itself shaped like a credential; "
                          "name the policy with --policy NAME")
    withheld = (*imported.withheld, *from_sampling, *(f"policy.{name}" for name in from_policy))
    return Imported(imported.rows, policy, sampling, tuple(dict.fromkeys(withheld)), imported.prompt_template)


def import_summary(n_rows: int, out: Path, imported: Imported, n_samples: int | None = None) -> str:
    """The lines ``python -m course.import_completions`` prints after writing (three, and a fourth naming
    what was left out because it may carry a credential; ``n_samples`` for a pack)."""
    what = (
        f"{n_rows} completions" if n_samples is None else f"{n_samples} samples of {n_rows} items as a selection pack"
    )
    lines = [
        f"imported {what} -> {visible(str(out))}",
        f"policy: {visible(imported.policy)}",
        f"sampling: {dumps_safe(imported.sampling, sort_keys=True)}",
        f"prompt: {_prompt_line(imported.prompt_template)}",
    ]
    if imported.withheld:
        lines.append(f"not recorded (may carry a credential): {visible(', '.join(imported.withheld))}")
    return "\n".join(lines)


def _prompt_line(template: dict[str, str] | None) -> str:
    if template is None:
        return ("not recorded: the gate will count it as the dataset prompt as-is "
                "(state it with --prompt-template NAME or a 'prompt' field on every line)")
    if template["name"] == "rendered":
        return f"the prompts the source logged, sha256 {template['sha256'][:12]}... (recorded as prompt_template)"
    return f"the course template {visible(template['name'])}, sha256 {template['sha256'][:12]}..."


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.external.rollout_readers"))
