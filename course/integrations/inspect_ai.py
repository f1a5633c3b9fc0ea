"""The course's instrument inside inspect_ai: a ``@scorer`` wrapping ``course.instrument.spec_v1.score`` and a
``@task``.

The scorer keeps the verdict's evidence where inspect shows it: ``value`` is the
reward (1.0 or 0.0), ``answer`` the integer the scorer extracted (None when the
completion did not parse), ``explanation`` the one-sentence reason and
``metadata`` the whole ``details`` dict (error code, scorer version, ...). It scores what the
model emitted, an assistant message's text parts joined with nothing in between
(``course.lib.external.messages``), not ``output.completion``, which inspect joins with ``"\n"``.

The task runs over a course dataset (``Sample.id`` = the course id, ``target`` =
the expected answer, the prompt as the only user message) and records the
dataset's sha256 and the scorer's version and fingerprint in the task metadata,
so ``python -m course.import_completions --format inspect`` can check that a log
answers the dataset it is imported against.

With any inspect model (a local server, or inspect's mock model)::

    inspect eval course/integrations/inspect_ai.py --model mockllm/model --limit 5 --log-dir runs/inspect_logs
    inspect eval course/integrations/inspect_ai.py -T dataset=data/datasets/math_holdout.jsonl \\
        --model ollama/qwen2.5:0.5b

(inspect_ai 0.3.285's ``mockllm/model`` counts tokens with tiktoken's ``o200k_base``, which
tiktoken downloads on first use: on a machine that has never had it the command above needs the
network once.) Fully offline, ``main`` below runs the same task through inspect's ``eval()``
with ``mockllm/model`` replaying a course completions file (token usage given, so nothing is
counted or downloaded)::

    python -m course.integrations.inspect_ai --completions data/rollouts/frozen_rollouts_dev.jsonl \\
        --log-dir runs/inspect_logs

Several epochs, offline: ``--pack`` replays a selection pack, sample k of an item as its epoch k+1
(``--epochs N``: the first N samples; with ``--completions``, ``--epochs N`` replays the same
completion N times). Samples run one at a time, so the epochs come out in the pack's order and
``python -m course.import_completions --format inspect --pack`` gives the pack back::

    python -m course.integrations.inspect_ai --pack data/rollouts/selection_pack_dev.jsonl --log-dir runs/inspect_x8

Needs the ``inspect`` extra (``pip install -e '.[inspect]'``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from course.cli import make_parser, positive_int, run
from course.lib.bundled import MATH_DEV, PROJECT_ROOT

DEFAULT_DATASET = MATH_DEV


def build_parser():
    """The command line of ``main``; built before inspect_ai is imported, so ``--help`` works without the extra."""
    p = make_parser(
        "python -m course.integrations.inspect_ai",
        "Run the course_math inspect task offline: inspect's eval() with mockllm/model replaying a completions file.",
        "  python -m course.integrations.inspect_ai --completions data/rollouts/frozen_rollouts_dev.jsonl"
        " --log-dir runs/inspect_logs\n"
        "  python -m course.import_completions --format inspect runs/inspect_logs"
        " --dataset data/datasets/math_dev.jsonl --out runs/inspect_dev.jsonl\n"
        "  python -m course.integrations.inspect_ai --pack data/rollouts/selection_pack_dev.jsonl"
        " --epochs 3 --log-dir runs/inspect_x3\n"
        "  python -m course.import_completions --format inspect runs/inspect_x3 --pack"
        " --dataset data/datasets/math_dev.jsonl --out runs/inspect_pack_dev.jsonl",
    )
    p.add_argument("--dataset", default=DEFAULT_DATASET, help=f"course dataset (default {DEFAULT_DATASET})")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--completions", help="frozen rollouts whose completions the mock model replays")
    source.add_argument("--pack", help="a selection pack: sample k of each item is replayed as its epoch k+1")
    p.add_argument("--epochs", type=positive_int, default=None,
                   help="epochs per item (default: 1, or every sample of the pack)")
    p.add_argument("--log-dir", required=True, help="where inspect writes its log")
    p.add_argument("--limit", type=positive_int, default=None, help="first N items only")
    return p


def _without_the_extra(argv: Sequence[str] | None, failure: ImportError) -> int:
    """``python -m`` when inspect_ai did not import: ``--help`` still prints; anything else is one line,
    exit 2 -- the extras rule's when inspect_ai is absent, or ``failure`` itself when inspect_ai is
    installed but one of its own dependencies is not (never a silent exit 0 with no eval run)."""
    from course.lib.extras import require

    build_parser().parse_args(argv)
    require("inspect", "python -m course.integrations.inspect_ai")
    raise failure  # course.cli.run words it (course.lib.extras.broken)


try:
    from inspect_ai import Task, task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.scorer import Score, Target, accuracy, scorer, stderr
    from inspect_ai.solver import TaskState, generate
except ImportError as exc:  # ImportError still (so importers can tell "extra missing"), with the fix in it
    if __name__ == "__main__":  # the decorators below need inspect_ai: stop here, as a tool does
        # exc is bound as a default: Python unbinds the except target when the handler ends
        # the default argument binds the exception the handler would unbind
        raise SystemExit(run(lambda argv, failure=exc: _without_the_extra(argv, failure)))  # type: ignore[misc]
    raise ImportError(
        "course.integrations.inspect_ai needs the inspect extra: pip install -e '.[inspect]'", name="inspect_ai"
    ) from exc

# After the guarded import above on purpose: a missing extra is reported before anything else loads.
from course.instrument.rubric_registry import scorer_fingerprint  # noqa: E402
from course.instrument.spec_v1 import SCORER_VERSION, score  # noqa: E402
from course.integrations.expected import library_answer  # noqa: E402
from course.lib.external.messages import output_text  # noqa: E402
from course.lib.records.manifest import sha256_file  # noqa: E402
from course.lib.visible import visible  # noqa: E402

TASK_NAME = "course_math"


def verdict_to_score(verdict: Mapping[str, Any]) -> Score:
    """One ``course.instrument.spec_v1.score`` verdict as an inspect ``Score`` (the evidence travels with it)."""
    details = verdict["details"]
    extracted = details.get("extracted")
    return Score(
        value=verdict["reward"],
        answer=None if extracted is None else str(extracted),
        explanation=details.get("reason"),
        metadata=dict(details),
    )


def expected_answers(metadata: Any, target: Target) -> list[int]:
    """The integer answer(s) a sample is scored against, read the way inspect users write them.

    The course's own samples carry ``metadata["expected_answer"]`` (an int). Any other task gives
    the answer as its ``Target``, which inspect always holds as strings (``Target("323")``;
    ``Target(["323", "0323"])`` lists alternatives, any of which is correct, as inspect's own
    ``match()`` reads them; ``Target.text`` would glue them into one number). Each is read by
    ``course.integrations.expected``. A target that is not an integer raises ``ValueError``:
    inspect records it as that sample's error (the eval stops, by default) instead of a
    ``bad_example`` 0 for every sample, which would read as a model that never answers. A sample
    with both, whose integer target is not its metadata's answer, raises too (which is meant is a guess).

    >>> expected_answers({}, Target("323")), expected_answers({"expected_answer": 7}, Target("7"))
    ([323], [7])
    """
    from_metadata = isinstance(metadata, dict) and "expected_answer" in metadata
    raw: list[Any] = [metadata["expected_answer"]] if from_metadata else list(target)
    if not raw:
        raise ValueError("course_strict: the sample has no target and no metadata expected_answer to score against")
    answers: list[int] = []
    for value in raw:
        answer, problem = library_answer(value)
        if problem is not None:
            raise ValueError(f"course_strict: {problem}; the strict verifier scores integer answers "
                             f"(Target(\"323\") or metadata expected_answer)")
        if answer not in answers:
            # library_answer gives an int whenever it reports no problem
            answers.append(answer)  # type: ignore[arg-type]
    if from_metadata:  # the metadata's answer: the target, when it is an integer, must agree
        said = [answer for answer, problem in map(library_answer, target) if problem is None]
        if said and answers[0] not in said:
            raise ValueError(f"course_strict: the sample's metadata expected_answer {answers[0]} and its target "
                             f"{list(target)!r} disagree; scoring against either one would be a guess")
    return answers


@scorer(metrics=[accuracy(), stderr()])
def course_strict():
    """The strict ``Final: <int>`` verifier (reward spec v1) as an inspect scorer."""

    async def score_one(state: TaskState, target: Target) -> Score:
        # what the model emitted, text parts joined with "" (course.lib.external.messages), not inspect's
        # completion, which joins them with "\n" and would score ["Final: ", "66"] as two lines
        text = output_text(state.output)
        verdicts = [score({"expected_answer": a}, text) for a in expected_answers(state.metadata, target)]
        # several targets are alternatives: the first that the completion answers correctly, else the first
        return verdict_to_score(next((v for v in verdicts if v["reward"] == 1.0), verdicts[0]))

    return score_one


def _resolve(dataset: str) -> Path:
    p = Path(dataset)
    if not p.exists() and not p.is_absolute() and (PROJECT_ROOT / p).exists():
        return PROJECT_ROOT / p  # `inspect eval` from another directory still finds the bundled data
    return p


def course_samples(dataset: str) -> list[Sample]:
    """The course dataset as inspect samples (id, prompt, target; expected_answer kept as an int)."""
    from course.lib.records.formats import read_dataset

    return [
        Sample(
            id=ex.id, input=ex.prompt, target=str(ex.expected_answer), metadata={"expected_answer": ex.expected_answer}
        )
        for ex in read_dataset(_resolve(dataset))
    ]


@task
def course_math(dataset: str = DEFAULT_DATASET) -> Task:
    """Generate one completion per course item and score it with the strict verifier."""
    path = _resolve(dataset)
    return Task(
        dataset=MemoryDataset(course_samples(dataset), name=path.stem),
        solver=generate(),
        scorer=course_strict(),
        name=TASK_NAME,
        metadata={
            "course_dataset_sha256": sha256_file(path),
            "course_scorer_version": SCORER_VERSION,
            "course_scorer_fingerprint": scorer_fingerprint(),
        },
    )


# ---------------------------------------------------------------------------
# Offline replay: inspect's mock model answering with a course completions file
# ---------------------------------------------------------------------------
def replay_outputs(dataset: str, completions: str | None, pack: str | None = None):
    """A ``custom_outputs`` callable for ``mockllm/model``: each prompt gets its item's frozen completion,
    or, from a selection pack, its samples in order (the n-th request for a prompt gets sample n-1,
    so run the samples one at a time: ``max_samples=1``).

    Matched by prompt text (prompts are unique within a course dataset). Usage is set, so mockllm
    counts no tokens.
    """
    from inspect_ai.model import ModelOutput, ModelUsage

    from course.errors import CourseError
    from course.lib.records.formats import iter_completions, iter_samples

    source = pack if pack is not None else str(completions)
    if pack is not None:
        by_id = {s.id: [x.completion or "" for x in s.samples] for s in iter_samples(pack)}
    else:
        by_id = {c.id: [c.completion or ""] for c in iter_completions(source)}
    by_prompt: dict[str, list[str]] = {}
    for ex in course_samples(dataset):
        if ex.id not in by_id:
            raise CourseError(f"{source}: no completion for item {ex.id!r} of {dataset}")
        by_prompt[str(ex.input)] = by_id[str(ex.id)]
    asked: dict[str, int] = {}

    def respond(messages, tools, tool_choice, config):
        prompt = messages[-1].text
        n = asked[prompt] = asked.get(prompt, -1) + 1
        texts = by_prompt[prompt]
        text = texts[n % len(texts)]
        out = ModelOutput.from_content(model="mockllm/model", content=text)
        out.usage = ModelUsage(
            input_tokens=len(messages[-1].text),
            output_tokens=len(text),
            total_tokens=len(messages[-1].text) + len(text),
        )
        return out

    return respond


def main(argv: Sequence[str] | None = None) -> int:
    return run(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    import inspect_ai

    args = build_parser().parse_args(argv)
    epochs = args.epochs or (_samples_per_item(args.pack) if args.pack else 1)
    logs = inspect_ai.eval(
        course_math(args.dataset), model="mockllm/model",
        model_args={"custom_outputs": replay_outputs(args.dataset, args.completions, args.pack)},
        log_dir=args.log_dir, limit=args.limit, display="none", log_format="eval",
        epochs=epochs, max_samples=1,
    )
    log = logs[0]
    if log.status != "success":
        from course.errors import CourseError

        raise CourseError(f"inspect eval ended with status {log.status}: {log.error.message if log.error else ''}")
    acc = log.results.scores[0].metrics["accuracy"].value if log.results else float("nan")
    print(f"inspect log: {visible(str(log.location))}")
    items = log.eval.dataset.samples if args.limit is None else args.limit
    print(f"course_strict accuracy: {acc:.3f} over {items} samples" + (f", {epochs} epochs each" if epochs > 1 else ""))
    return 0


def _samples_per_item(pack: str) -> int:
    """The fewest samples any item of ``pack`` holds: every item can be replayed that many epochs."""
    from course.lib.records.formats import iter_samples

    return min(len(s.samples) for s in iter_samples(pack))


if __name__ == "__main__":
    raise SystemExit(main())
