"""Ray as the engine that runs a sharded evaluation: one Ray task per part, then the one merge.

Ray schedules; the course measures. Each task is ``course.lib.evaluation.pipeline.evaluate`` with a
``Shard`` (what ``python -m course.eval --shard K/N`` does), writing its part run where every node
can see it; the driver then calls ``course.lib.evaluation.pipeline.merge_eval_runs``, which checks the
parts and writes the run one process would have written, byte for byte (results.jsonl and
summary.json), so the gate treats it exactly as that run. Nothing here is a scheduler of its own:
no retries, no placement, no queue; that is what Ray is for.

    run_dir, manifest, summary, parts = evaluate_on_ray(dataset, completions, shards=4, outdir="runs/big")

On this machine ``ray.init`` starts a local Ray (``num_cpus`` workers, no dashboard, usage stats
off: nothing leaves the machine). On a cluster, ``address`` names it (``"auto"`` inside a Ray job,
``ray://head:10001`` from outside) and the same code runs; the dataset, the completions and the
parts directory must then be paths every node reads and writes (shared storage), and the nodes need
this package installed with its ``ray`` extra (``pip install '.[ray]'``). ``python -m course.ray_eval``
is the command line; docs/scaling.md walks through both.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from course.errors import CourseError
from course.lib.bundled import PROJECT_ROOT
from course.lib.evaluation.pipeline import merge_eval_runs
from course.lib.evaluation.shards import Shard, check_parts_outside
from course.lib.records.runs import resolve_outdir

# Ray phones home by default; the course never reaches the network at run time. A user who wants the
# statistics sent sets the variable themselves.
USAGE_STATS_VARIABLE = "RAY_USAGE_STATS_ENABLED"


@dataclass(frozen=True)
class PartDone:
    """What one Ray task reports about the part it wrote."""

    shard: str  # "K/N"
    run_dir: str
    n_items: int
    seconds: float  # the task's own wall time, inside its worker
    host: str
    pid: int


def part_argv(dataset: Path, completions: Path, part_dir: Path, shard: Shard, *, rubric: str,
              allow_missing: bool, split: str | None) -> list[str]:
    """The ``python -m course.eval`` arguments that write this part by hand: recorded as the part's command."""
    argv = ["--dataset", str(dataset), "--completions", str(completions), "--shard", shard.label,
            "--outdir", str(part_dir)]
    if rubric != "strict":
        argv += ["--rubric", rubric]
    if allow_missing:
        argv.append("--allow-missing")
    if split is not None:
        argv += ["--split", split]
    return argv


def score_part(dataset: str, completions: str, part_dir: str, index: int, count: int, rubric: str,
               allow_missing: bool, split: str | None, force: bool) -> PartDone:
    """One part, in whatever process runs it (a Ray worker here): ``evaluate`` with the shard, as course.eval does."""
    from course.lib.evaluation.pipeline import evaluate

    shard = Shard(index, count)
    start = time.perf_counter()
    argv = part_argv(Path(dataset), Path(completions), Path(part_dir), shard, rubric=rubric,
                     allow_missing=allow_missing, split=split)
    run_dir, _, summary = evaluate(Path(dataset), Path(completions), outdir=part_dir, force=force,
                                   allow_missing=allow_missing, split=split, argv=argv, rubric=rubric, shard=shard)
    return PartDone(shard.label, str(run_dir), summary["n"], time.perf_counter() - start, socket.gethostname(),
                    os.getpid())


def init_ray(*, address: str | None = None, num_cpus: int | None = None) -> Any:
    """Start a local Ray (``num_cpus`` workers, no dashboard) or join the cluster at ``address``; usage stats off
    unless the environment says otherwise. Returns the ``ray`` module. A Ray already initialised is used as it is."""
    os.environ.setdefault(USAGE_STATS_VARIABLE, "0")
    import ray

    if ray.is_initialized():
        return ray
    root = str(PROJECT_ROOT)  # workers import this package from where the driver does
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    options: dict[str, Any] = {"include_dashboard": False, "logging_level": "WARNING", "log_to_driver": False,
                               "runtime_env": {"env_vars": {"PYTHONPATH": path,
                                                            USAGE_STATS_VARIABLE: os.environ[USAGE_STATS_VARIABLE]}}}
    if address is None:
        options["num_cpus"] = num_cpus
    else:
        options["address"] = address
        # nodes have their own install
        options["runtime_env"] = {"env_vars": {USAGE_STATS_VARIABLE: os.environ[USAGE_STATS_VARIABLE]}}
    try:
        ray.init(**options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CourseError(f"ray.init({'address=' + repr(address) if address else 'local'}) failed: {first}") from None
    return ray


def evaluate_on_ray(
    dataset: str | os.PathLike[str],
    completions: str | os.PathLike[str],
    *,
    shards: int,
    outdir: str | os.PathLike[str] | None,
    parts_dir: str | os.PathLike[str] | None = None,
    force: bool = False,
    rubric: str = "strict",
    allow_missing: bool = False,
    split: str | None = None,
    address: str | None = None,
    num_cpus: int | None = None,
    argv: Sequence[str] | None = None,
) -> tuple[Path, dict[str, Any], dict[str, Any], list[PartDone]]:
    """Score ``shards`` parts as Ray tasks, then merge them into ``outdir``; return the merged run and each part's
    report.

    The destination is reserved before any task starts (an existing run without ``force`` fails at once).
    Parts go to ``parts_dir`` (default ``<outdir>_parts/``), one run directory each (``part_K_of_N``), kept
    after the merge: each is a run of its own, named in the merged manifest's ``merged_from``.
    """
    check_parts_outside(outdir, parts_dir)  # before the destination is reserved and before Ray starts
    final = resolve_outdir(outdir, force=force, prefix="eval")
    check_parts_outside(final, parts_dir)  # the default destination, now it has a name
    parts_root = Path(parts_dir) if parts_dir is not None else final.with_name(final.name + "_parts")
    data, comp = Path(dataset).resolve(), Path(completions).resolve()
    for path, what in ((data, "dataset"), (comp, "completions")):
        if not path.is_file():
            raise CourseError(f"{path}: no such file (the {what})")
    ray = init_ray(address=address, num_cpus=num_cpus)
    task = ray.remote(num_cpus=1, max_retries=0)(score_part)
    part_dirs = [parts_root.resolve() / f"part_{k}_of_{shards}" for k in range(shards)]
    futures = [task.remote(str(data), str(comp), str(part_dirs[k]), k, shards, rubric, allow_missing, split, force)
               for k in range(shards)]
    try:
        done: list[PartDone] = ray.get(futures)
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause if isinstance(getattr(exc, "cause", None), CourseError) else None
        if cause is not None:  # a part refused its input: the same one line course.eval would print
            raise CourseError(str(cause)) from None
        raise
    run_dir, manifest, summary = merge_eval_runs([p.run_dir for p in done], outdir=final, force=force,
                                                 dataset=data, argv=argv)
    return run_dir, manifest, summary, done


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.integrations.ray"))
