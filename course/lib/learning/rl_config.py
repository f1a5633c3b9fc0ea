"""Loop C's settings, declared once: every field's default, bounds and help, and the checks between them.

Read first (then ``rl_objective`` -> ``rl_loop`` -> ``rl_run``). One frozen dataclass, ``RLConfig``;
each field carries its help text and its bounds as metadata, so both RL tools' command lines are
generated from it (``course.cli.add_settings_flags``: ``--prompts-per-step`` is the field
``prompts_per_step``) and a run records exactly ``asdict(settings)``. Two presets, one per policy:
``TINYLM`` (the field defaults) and ``LLM`` (the real LLM's, slower per sample: fewer steps, a shorter
fixed slice). ``__post_init__`` refuses what the algorithm cannot run with, as one ``CourseError``
line naming the flag (exit 2 in a tool), before any work.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable

from course.errors import CourseError
from course.instrument.rubric_registry import get_rubric
from course.lib.learning.rl_objective import KL_DEFAULT, KL_ESTIMATORS, KL_PLACES, LOSS_NORMS, REWARD_SCALES

# Bounds where memory or disk grows with a setting: one step samples P x G rows at once (each row holds a
# KV cache of the whole context), an evaluation batches its samples per item, every save is a checkpoint.
MAX_STEPS = 100_000
MAX_ROWS = 4096  # P x G, the rows sampled and back-propagated together in one step
MAX_SAMPLES = 1024  # samples per item of an evaluation
MAX_DRAWS = 16  # dynamic sampling: batches drawn per step at most (each costs a step's sampling)
MAX_CHECKPOINTS = 1000  # steps / save_every (each ~5 MB)
# More threads than a laptop has only oversubscribes the CPU (100000 had not finished a 3-item sample after 120 s).
MAX_THREADS = 64
SEED_BOUNDS = (0, 2**63 - 1)  # what every random generator of the course accepts
DEV_ITEMS = 100  # math_dev's size: a fixed slice of this many items is all of it


def setting(default: Any, help: str | Callable[[Any], str], *, bounds: tuple[Any, Any] | None = None,
            choices: tuple[str, ...] | None = None, seed: bool = False, metavar: str | None = None,
            default_flag: Any = ...) -> Any:
    """A field of ``RLConfig``: its default, its help (``{default}`` is the preset's value), its bounds
    ((low, high); high None = only the CLI's general cap) or choices, and how its flag shows.
    ``default_flag``: the flag's default when it is not the preset's value (None: decided in ``__post_init__``)."""
    meta = {"help": help, "bounds": SEED_BOUNDS if seed else bounds, "choices": choices, "seed": seed,
            "metavar": metavar, "default_flag": default_flag}
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class RLConfig:
    """The settings of one run of Loop C: what a tool's flags set, and what its manifest records."""

    rubric: str = setting("strict",
                          "training reward: strict, or a hackable one from course.rubrics (default {default})")
    seed: int = setting(0, "seed of the training prompts and samples (default {default})", seed=True)
    beta: float = setting(0.05, "KL penalty weight (default {default})", bounds=(0.0, 100.0))
    steps: int = setting(60, "policy updates (default {default})", bounds=(1, MAX_STEPS))
    prompts_per_step: int = setting(8, "P, problems per step (default {default})", bounds=(1, MAX_ROWS))
    group_size: int = setting(8, "G, samples per problem (default {default})", bounds=(1, MAX_ROWS))
    lr: float = setting(3e-4, "Adam learning rate (default {default})", bounds=(1e-8, 1.0))
    grad_clip: float = setting(1.0, "gradient norm clip (default {default})", bounds=(1e-6, 1e6))
    temperature: float = setting(1.0, "sampling temperature for training AND evaluation "
                                      "(default {default}: the policy itself)", bounds=(1e-3, 100.0))
    max_tokens: int = setting(32, "completion length limit (default {default})", bounds=(1, None))
    eval_every: int = setting(5, "steps between fixed-slice evaluations (default {default})", bounds=(1, None))
    eval_samples: int = setting(2, "samples per math_dev item in the fixed slice (default {default})",
                                bounds=(1, MAX_SAMPLES))
    slice_items: int = setting(DEV_ITEMS, lambda n: "first N math_dev items form the fixed slice "
                                                    f"(default {n}{' = all' if n == DEV_ITEMS else ''})",
                               bounds=(1, None))
    holdout_samples: int = setting(8, "samples per holdout item for pass@1 (default {default})",
                                   bounds=(1, MAX_SAMPLES))
    eval_seed: int = setting(0, "sampling seed of every evaluation (default {default}: the same draws for every run)",
                             seed=True)
    save_every: int = setting(20, "checkpoint interval in steps (default {default})", bounds=(1, None))
    threads: int = setting(2, "PyTorch threads (default {default}; part of reproducibility)", bounds=(1, MAX_THREADS))
    gate_min_delta: float = setting(0.10, "course.gate's bar for promoting the final policy over pi0 on the holdout "
                                          "(default {default:.2f}; significance is also required)", bounds=(-1.0, 1.0))
    # The objective's switches (rl_objective.policy_loss; docs/objective.md) and how a step's batch is drawn
    kl_estimator: str = setting(
        None,  # the standard pairing for kl_in (rl_objective.KL_DEFAULT), set in __post_init__
        "KL estimate per token: k1 = log pi/pi0, k2 = 1/2 (log pi/pi0)^2, k3 = pi0/pi - 1 - log pi0/pi, "
        "k3-corrected = k3 x pi/sg(pi) (TRL's default) "
        f"(default: {KL_DEFAULT['loss']} in the loss, {KL_DEFAULT['reward']} in the reward; "
        "python -m course.kl_estimators shows what each one's gradient follows)",
        choices=tuple(KL_ESTIMATORS), default_flag=None)
    kl_in: str = setting("loss", "where the KL penalty goes: a per-token loss term (default, GRPO) "
                                 "or subtracted from each completion's reward (PPO-style RLHF)", choices=KL_PLACES)
    loss_norm: str = setting("constant", "what the loss's token sum is divided by: "
                                         "constant = the number of samples (default; Dr. GRPO-like), "
                                         "seq-mean = each completion's length too (GRPO), "
                                         "token-mean = all tokens of the batch (DAPO); "
                                         "see python -m course.loss_normalisation", choices=LOSS_NORMS)
    scale_rewards: str = setting("none", "divide each advantage by its group's reward standard deviation "
                                         "(group, GRPO) or not (none, default)", choices=REWARD_SCALES)
    # Dynamic sampling (DAPO; rl_loop.sample_step): up to this many batches of P problems are drawn per step
    # and the groups whose rewards differ are trained on; 1 = off
    dynamic_sampling: int = setting(1, "DAPO's dynamic sampling: draw up to MAX_DRAWS batches of fresh problems per "
                                       "step and train on the groups whose rewards differ (default {default}: off; "
                                       "each extra draw costs one step's sampling)",
                                    bounds=(1, MAX_DRAWS), metavar="MAX_DRAWS")
    # The gradient pass in parts (rl_loop.gradient_pass): the same gradient, summed part by part, with the
    # activations of one part alive at a time (memory, not arithmetic)
    grad_chunks: int = setting(1, "run the policy's log-probability pass and its backward in this many parts of "
                                  "whole groups and add the gradients: the same update up to float rounding, "
                                  "with one part's activations in memory at a time (default {default}: one pass)",
                               bounds=(1, None), metavar="PARTS")

    def __post_init__(self) -> None:
        if self.kl_estimator is None:  # the standard pairing for the place the KL goes
            object.__setattr__(self, "kl_estimator", KL_DEFAULT.get(self.kl_in))
        for f in fields(self):
            check_field(f, getattr(self, f.name))
        if self.group_size < 2:
            raise CourseError(
                "--group-size must be at least 2: the baseline is the mean of the other samples of the prompt"
            )
        if self.grad_chunks > self.prompts_per_step:
            raise CourseError(f"--grad-chunks must be at most --prompts-per-step ({self.prompts_per_step}): "
                              "each part holds whole groups")
        if self.prompts_per_step * self.group_size > MAX_ROWS:
            raise CourseError(
                f"--prompts-per-step x --group-size is {self.prompts_per_step * self.group_size:,} rows per step; "
                f"at most {MAX_ROWS:,} are sampled and trained together (memory grows with them)"
            )
        if self.steps // self.save_every > MAX_CHECKPOINTS:
            raise CourseError(f"--steps / --save-every would write {self.steps // self.save_every:,} checkpoints; "
                              f"at most {MAX_CHECKPOINTS:,} (raise --save-every)")
        get_rubric(self.rubric)  # an unknown name is one line

    def check_max_tokens(self, limit: int) -> None:
        """The policy's own bound on ``max_tokens`` (its context): the tiny LM's is 48, the real LLM's 256."""
        if not 1 <= self.max_tokens <= limit:
            raise CourseError(f"--max-tokens must be between 1 and {limit}, got {self.max_tokens}")


def flag(name: str) -> str:
    """The command-line flag of the field ``name``."""
    return "--" + name.replace("_", "-")


def check_field(f: Any, value: Any) -> None:
    """One field against its declared choices or bounds (what the flag's type already checks on the command line)."""
    choices, bounds = f.metadata.get("choices"), f.metadata.get("bounds")
    if choices is not None and value not in choices:
        raise CourseError(f"{flag(f.name)} must be one of {', '.join(choices)}, got {value!r}")
    if bounds is not None:
        low, high = bounds
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= low or (
                high is not None and not value <= high):
            shown = f"at least {low}" if high is None else f"between {low} and {high}"
            raise CourseError(f"{flag(f.name)} must be {shown}, got {value!r}")


TINYLM = RLConfig()  # the tiny LM: its defaults reach the course's target lift in a few minutes on a laptop
LLM = replace(TINYLM, steps=20, lr=5e-4, max_tokens=16, eval_every=10, slice_items=48)  # SmolLM2-135M + LoRA on CPU


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.learning.rl_config"))
