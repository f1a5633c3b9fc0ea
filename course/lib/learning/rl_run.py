"""Loop C's run: the shared skeleton of both RL tools, and everything after training.

Last of four files (``rl_config`` -> ``rl_objective`` -> ``rl_loop`` -> ``rl_run``). Both RL tools
(``course.tinylm.rl``, ``course.llm.rl``) run the same skeleton, and differ only in how they load
their policy and what their manifest adds::

    settings = cli.settings_from_args(rl_config.TINYLM, args)       # built once, checked once
    with run_directory(TOOL, args.outdir, ...) as (tmp, final):     # written aside, one rename
        trained = rl_loop.train(settings, policy, tmp, ...)         # rl_log.jsonl, checkpoints/, final.*
        summary = write_run(settings, tmp, final, trained, ...)     # curves, shift.md, holdout, summary.json
        write_manifest(tmp, manifest(TOOL, settings, trained, summary, argv, ...))   # last: the run is complete

After training, pi0 and the final policy are sampled on math_holdout with identical settings, both
scored by ``course.eval``'s pipeline into the run directory and compared by the gate's logic
(``course.lib.evaluation.locked_room``): a Locked-Room comparison where only the policy differs.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import asdict, dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from course.lib.bundled import DEFAULT_DATASETS, MATH_HOLDOUT
from course.lib.evaluation.locked_room import Outcomes, decide, load_outcomes, render
from course.lib.evaluation.pipeline import evaluate
from course.lib.learning.rl_config import RLConfig
from course.lib.learning.rl_loop import ProgressFactory, Say, Trained, zero_signal
from course.lib.learning.rl_objective import objective_text
from course.lib.policy.training_problems import read_items
from course.lib.records.jsonl import dumps_line
from course.lib.records.manifest import environment, input_fingerprint, peak_rss_kib
from course.lib.records.runs import atomic_run_dir, resolve_outdir, write_json, write_text
from course.lib.reporting.rl_report import tail_means, write_curves
from course.lib.stats import clustered_interval, paired_bootstrap
from course.lib.visible import visible


@dataclass(frozen=True)
class RLTool:
    """What names one RL tool's runs: the tool, its run directories' prefix, its manifest's one line."""

    name: str  # "course.tinylm.rl"
    prefix: str  # runs/<prefix>_NNN when no --outdir is given
    what: str  # the manifest's "what"
    excluded: str = "dev+holdout"  # the splits whose prompts its training stream never draws (the manifest says so)


@dataclass(frozen=True)
class StartingPoint:
    """The policy the RL steps started from, when a warm start moved it off pi0: its name in records and
    a context in which the trained policy computes as it was then (the LLM's anchored adapters), so the
    holdout can measure RL's own part of the lift (final against its starting point, paired)."""

    name: str
    computing_as: Callable[[], Any]  # () -> a context manager


# ---------------------------------------------------------------------------
# The skeleton: the run directory, and the manifest both tools share
# ---------------------------------------------------------------------------
@contextlib.contextmanager
def run_directory(tool: RLTool, outdir: str | None, *, force: bool, inputs: Sequence[Any],
                  say: Say) -> Iterator[tuple[Path, Path]]:
    """(tmp, final): the run is written into ``tmp``, which becomes ``final`` in one rename when complete.
    ``inputs``: files the run reads, so ``--force`` refuses a folder holding one before minutes of training."""
    final = resolve_outdir(outdir, force=force, prefix=tool.prefix, tool=tool.name, inputs=inputs)
    say(f"run directory: {visible(str(final))}")
    with atomic_run_dir(final, force=force, prefix=tool.prefix) as tmp:
        yield tmp, final


def manifest(tool: RLTool, s: RLConfig, trained: Trained, summary: dict[str, Any], argv: Sequence[str] | None, *,
             settings_extra: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    """manifest.json: the command, ``asdict(s)`` and the tool's own settings (``settings_extra``), the
    tool's own ``fields`` (what it loaded), the data and the result's hashes."""
    import torch

    return {
        **environment(tool.name, argv),
        "what": tool.what,
        "settings": asdict(s) | settings_extra,
        **fields,
        "objective": objective_text(s) + "; k1 and k3 both logged",
        "final_policy": {"file": trained.final_file, "sha256": trained.final_sha, "policy": summary["final_policy"]},
        "datasets": [input_fingerprint(p) for p in DEFAULT_DATASETS],
        "training_prompts": f"course.tinylm.sft_data.problem_stream('rl-prompts:{s.seed}', "
                            f"exclude={tool.excluded} prompts)",
        "torch": torch.__version__,
        "threads": trained.policy.threads,
        "rl_log_sha256": trained.log_sha256,
        "wall_seconds": summary["wall_seconds"],
        "peak_rss_mb": summary["peak_rss_mb"],
    }


# ---------------------------------------------------------------------------
# After training: the shift table, the holdout comparison, its gate, the summary
# ---------------------------------------------------------------------------
def write_run(s: RLConfig, tmp: Path, final: Path, trained: Trained, argv: Sequence[str] | None, t_start: float, *,
              holdout: bool, progress: ProgressFactory, say: Say, tool: str,
              summary_extra: dict[str, Any] | None = None, start: StartingPoint | None = None) -> dict[str, Any]:
    """Everything after training, into the temporary run directory ``tmp`` (which becomes ``final``):
    curves, the distribution-shift table, the holdout comparison and its gate, and summary.json, which
    it returns (the tool then writes manifest.json, last: a manifest means the run is complete).
    ``start``: the warm start RL began from, measured on the holdout too (three policies, paired)."""
    write_curves(tmp, trained.records, s.rubric, title=tool)  # curves.csv, curves.png
    summary = run_summary(s, trained)
    summary.update(summary_extra or {})
    trained.policy.train_mode(False)
    shift = trained.policy.shift_report(trained.final_name)
    if shift is not None:
        write_text(tmp / "shift.md", shift["markdown"])
        summary["shift"] = {k: v for k, v in shift.items() if k != "markdown"}
    if holdout:
        summary["holdout"] = holdout_comparison(s, tmp, final, trained, argv, progress=progress, say=say, start=start)
    summary["wall_seconds"] = round(time.time() - t_start, 1)
    summary["peak_rss_mb"] = peak_rss_mb()
    write_json(tmp / "summary.json", summary)
    return summary


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (its own: ``manifest.peak_rss_kib``)."""
    return round(peak_rss_kib() / 1024, 1)


def holdout_comparison(s: RLConfig, tmp: Path, final: Path, trained: Trained, argv: Sequence[str] | None, *,
                       progress: ProgressFactory, say: Say, start: StartingPoint | None = None) -> dict[str, Any]:
    """Sample pi0 and the final policy on math_holdout with identical settings, n samples per item;
    score each pack with course.eval (a multi-sample run), estimate pass@1 and the lift, and gate.

    With ``start`` (a warm start), its policy is the third, sampled with the same seeds: the total lift
    splits into the warm start's (``warm_start`` - pi0) and RL's own (final - ``warm_start``), each
    paired over items with its bootstrap interval, and RL's is gated on its own (``gate_rl.txt``:
    final against its starting point, min delta 0, significance required): did the RL steps add
    anything the warm start had not?

    One measurement for the headline and the decision: the packs' course.eval runs give the
    pass@1 (with its item-clustered interval: the samples of an item are not independent), the
    per-item rates the lift is paired over, and the gate's input. Files go to ``tmp``, the run
    directory being written; ``final`` is the name it will have, which the course.eval manifests
    and gate.txt record.
    """
    holdout_path = DEFAULT_DATASETS[1]
    items = read_items(holdout_path)
    pairs = [(it["id"], it["prompt"]) for it in items]
    settings = dict(seed=s.eval_seed, temperature=s.temperature, top_p=1.0, max_tokens=s.max_tokens)
    out: dict[str, Any] = {"dataset": MATH_HOLDOUT, "sampling": settings | {"n_for_pass_at_1": s.holdout_samples}}
    per_item: dict[str, list[float]] = {}
    policy = trained.policy
    tags: list[tuple[str, bool, str, Callable[[], Any]]] = [("pi0", True, policy.pi0_name, contextlib.nullcontext)]
    if start is not None:
        tags.append(("warm_start", False, start.name, start.computing_as))
    tags.append(("final", False, trained.final_name, contextlib.nullcontext))
    for tag, is_pi0, name, computing_as in tags:
        line = progress(f"holdout {tag}: items", len(items))
        # n samples per item (a selection pack; n = 1: a rollouts file), scored by course.eval as one run
        with computing_as():
            pack, trunc_n = policy.rollout_records(pairs, pi0=is_pi0, policy_name=name, n=s.holdout_samples, **settings,
                                                   progress=line.update)
        line.clear()
        pack_path = tmp / f"holdout_{tag}_pack.jsonl"
        write_text(pack_path, "".join(dumps_line(r) + "\n" for r in pack))
        eval_dir = tmp / f"eval_{tag}_holdout"
        # (the run is still in its temporary directory: its manifest names the pack where it will be)
        evaluate(holdout_path, pack_path, outdir=eval_dir, argv=argv, completions_recorded_as=final / pack_path.name)
        scored = load_outcomes(str(eval_dir))
        counts = list(scored.counts_by_id.values())  # dataset order
        per_item[tag] = [k / m for k, m in counts]
        lo, hi = clustered_interval([k for k, _ in counts], [m for _, m in counts])
        out[tag] = {
            "policy": name,
            "eval_dir": eval_dir.name,
            "pass_at_1": round(scored.passed / scored.n, 4),
            "pass_at_1_ci95": [round(lo, 4), round(hi, 4)],
            "pass_at_1_ci95_method": "item-clustered",
            "passed": scored.passed,
            "samples": scored.n,
            "truncated": trunc_n,
        }
        say(f"holdout {tag} ({name}): sampled and scored by course.eval ({scored.passed}/{scored.n} strict passes "
            f"over {len(items)} items x {s.holdout_samples})")
    lo, hi = paired_bootstrap(per_item["pi0"], per_item["final"], seed=s.eval_seed)
    # From the counts, not from the rounded rates: the one lift figure of the run.
    lift = (out["final"]["passed"] - out["pi0"]["passed"]) / out["final"]["samples"]
    out["items"] = len(items)
    out["lift_pass_at_1"] = round(lift, 4)
    out["lift_paired_bootstrap95"] = [round(lo, 4), round(hi, 4)]
    # (the lift is the run's result: the tool states it once, on stdout, through rl_report.lift_text)
    out["gate"] = holdout_gate(tmp, final, s.gate_min_delta, say)
    if start is not None:
        for key, a, b in (("warm_start_over_pi0", "pi0", "warm_start"), ("rl_over_warm_start", "warm_start", "final")):
            lo, hi = paired_bootstrap(per_item[a], per_item[b], seed=s.eval_seed)
            out[key] = {"lift_pass_at_1": round((out[b]["passed"] - out[a]["passed"]) / out[b]["samples"], 4),
                        "lift_paired_bootstrap95": [round(lo, 4), round(hi, 4)]}
        # RL's own part, gated on its own: better than where RL started, and distinguishable from noise
        out["rl_over_warm_start"]["gate"] = holdout_gate(tmp, final, 0.0, say, base="warm_start", report="gate_rl.txt")
    return out


def holdout_gate(tmp: Path, final: Path, min_delta: float, say: Say, *, base: str = "pi0",
                 report: str = "gate.txt") -> dict[str, Any]:
    """The gate's decision on two holdout course.eval runs (``base``, pi0 by default = baseline, final =
    candidate), the same samples the headline pass@1 and lift come from (paired over items when n > 1);
    its report goes to ``report``, naming the runs where they will be.

    The bar: at least ``min_delta`` better, and distinguishable from noise (p < 0.05).
    """
    def outcomes(tag: str) -> Outcomes:
        o = load_outcomes(str(tmp / f"eval_{tag}_holdout"))
        return replace(o, run=replace(o.run, path=final / f"eval_{tag}_holdout"))

    b, cand = outcomes(base), outcomes("final")
    result = decide(b, cand, Fraction(f"{min_delta:g}"), require_significance=True)
    write_text(tmp / report, "\n".join(render(result, b, cand)) + "\n")
    verdict = result["decision"]
    say(f"course.gate, final against {base}, on the holdout course.eval runs (the same samples as the headline): "
        f"{verdict} (report: {report})")
    out = {"verdict": verdict, "exit_code": 0 if verdict == "ACCEPT" else 1, "min_delta": min_delta,
           "require_significance": True}
    if base != "pi0":  # (the gate against pi0 records no p-value)
        out["p_value"] = (
            round(result["paired"]["p_value"], 6) if result.get("paired") and "p_value" in result["paired"] else None
        )
    return out


def run_summary(s: RLConfig, trained: Trained) -> dict[str, Any]:
    """summary.json before the tool's own fields, the shift table, the holdout and the wall time are added."""
    summary = {
        "rubric": s.rubric,
        "beta": s.beta,
        "seed": s.seed,
        "steps": s.steps,
        "pi0": trained.policy.pi0_name,
        "final_policy": trained.final_name,
        "first_eval": trained.evals[0],
        "last_eval": trained.evals[-1],
        "final_train": tail_means(trained.records, 5),
        "goodhart_alarms": trained.alarms,
        "objective": {"kl_estimator": s.kl_estimator, "kl_in": s.kl_in, "loss_norm": s.loss_norm,
                      "scale_rewards": s.scale_rewards},
        "zero_signal": zero_signal(trained.records, s),
        "train_seconds": round(trained.train_seconds, 1),
        "rl_log_sha256": trained.log_sha256,
    }
    if trained.skipped_updates:  # (only then: a run without such a step has no such field)
        summary["skipped_updates"] = trained.skipped_updates
    return summary



if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.learning.rl_run"))
