"""The list of tools: every ``python -m course.<tool>`` with one line each, grouped by loop.

``python -m course``, ``python -m course.tinylm`` and ``python -m course.exercises``
print the matching part of this table. It is data, kept in one place; a test checks
that every runnable module of the package appears here exactly once and that every
name here is runnable, so the list cannot drift from the code.
"""

from __future__ import annotations

from typing import NamedTuple


class Tool(NamedTuple):
    module: str  # what follows `python -m`
    group: str
    summary: str


GROUPS = (
    "The instrument",
    "Loop A - evaluation",
    "Loop B - selection",
    "Loop C - learning",
    "Loop C - the tiny language model (needs the lm extra)",
    "A real LLM: SmolLM2-135M-Instruct on the CPU (needs the llm extra)",
    "Reward as a spec",
    "Data in and out",
)

TOOLS: tuple[Tool, ...] = (
    Tool("course.score", GROUPS[0], "score one completion with the strict verifier; print the verdict"),
    Tool("course.rubrics", GROUPS[0], "list the rubrics, or score one string under a rubric beside strict"),
    Tool("course.eval", GROUPS[1], "score frozen rollouts against a dataset; write a run directory"),
    Tool("course.inspect_run", GROUPS[1], "look inside a run: outcome codes and real examples of each"),
    Tool("course.gate", GROUPS[1], "the Locked Room: is the candidate better under the same conditions?"),
    Tool("course.ray_eval", GROUPS[1], "score as Ray tasks, one shard each, merged into the one-process run (needs "
                                       "the ray extra)"),
    Tool("course.report", GROUPS[1], "write one self-contained HTML page for runs and gate decisions"),
    Tool("course.power", GROUPS[1], "plan a measurement: items, samples per item and seeds to detect a lift"),
    Tool("course.selection_demo", GROUPS[2], "best-of-N over a pack of samples, with exact pass@k"),
    Tool("course.compare_policies", GROUPS[2], "several policies on the same items: pass@1, pass@k and error codes"),
    Tool("course.passk_estimators", GROUPS[2], "pass@k three ways (plug-in, first k, unbiased): bias and variance"),
    Tool("course.bandit_train", GROUPS[3], "REINFORCE on a softmax policy over a few completions, step by step"),
    Tool("course.toy_mdp", GROUPS[3], "credit assignment in a two-step decision with the reward at the end"),
    Tool("course.kl_tradeoff_demo", GROUPS[3], "how far a policy moves from its reference for how much reward"),
    Tool("course.kl_estimators", GROUPS[3], "k1, k2, k3 in the loss or the reward: which KL each one's gradient "
                                            "follows, exactly"),
    Tool("course.loss_normalisation", GROUPS[3], "each token's weight under GRPO, DAPO and Dr. GRPO loss "
                                                 "normalisations"),
    Tool("course.token_inspect", GROUPS[3], "how a completion becomes tokens, beside the scorer's verdict"),
    Tool("course.tinylm.sft_data", GROUPS[4], "the supervised data recipe for the reference policy pi0"),
    Tool("course.tinylm.sft", GROUPS[4], "train pi0 by supervised fine-tuning"),
    Tool("course.tinylm.sample", GROUPS[4], "sample the tiny LM on a dataset; write rollouts"),
    Tool("course.tinylm.rl", GROUPS[4], "REINFORCE with a group baseline and a KL leash to pi0"),
    Tool("course.tinylm.sweep", GROUPS[4], "the beta sweep: four RL runs, drift against reward"),
    Tool("course.tinylm.shift", GROUPS[4], "pi0's frozen rollouts beside what the trained policy does now"),
    Tool("course.llm.sample", GROUPS[5], "sample the real LLM on a dataset under a prompt template; write rollouts"),
    Tool("course.llm.rl", GROUPS[5], "Loop C on the real LLM: LoRA adapters, the course's RL loop, an optional "
                                     "RFT warm start"),
    Tool("course.golden", GROUPS[6], "the golden suites: regression tests for the scorer, as data"),
    Tool("course.red_team", GROUPS[6], "which known exploits does a rubric pay for; does strict hold?"),
    Tool("course.kata", GROUPS[6], "the debugging kata: label ten scored examples, then check"),
    Tool("course.exercises.planted_bugs", GROUPS[6], "three training loops, one planted bug each: find it "
                                                     "from the log"),
    Tool("course.datasets", GROUPS[7], "bring outside question/answer data into the dataset format"),
    Tool("course.import_completions", GROUPS[7], "turn outside model outputs into a rollouts file eval accepts"),
    Tool("course.rollout_sample", GROUPS[7], "sample completions from an OpenAI-compatible endpoint"),
    Tool("course.integrations.inspect_ai", GROUPS[7], "the instrument as an inspect_ai scorer and task"),
    Tool("course.integrations.hf_twin", GROUPS[7], "save the tiny LM as a Hugging Face model folder (for lm-eval)"),
)


def listing(prefix: str = "course.") -> str:
    """The tools whose module starts with ``prefix``, grouped, one line each."""
    chosen = [tool for tool in TOOLS if tool.module.startswith(prefix)]
    width = max(len(tool.module) for tool in chosen)
    lines: list[str] = []
    for group in GROUPS:
        members = [tool for tool in chosen if tool.group == group]
        if not members:
            continue
        lines.append(f"{group}:" if not lines else f"\n{group}:")
        lines.extend(f"  python -m {tool.module:<{width}}  {tool.summary}" for tool in members)
    lines.append("\nEach tool explains itself: python -m <tool> --help (a worked example at the end).")
    return "\n".join(lines)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.toolbox"))
