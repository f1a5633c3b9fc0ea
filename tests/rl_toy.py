"""The toy batch and loop settings the RL-loop tests share (tests/test_rl_loop.py, tests/test_llm_rl.py).

Two problems whose answers a policy can be pushed towards, and ``loop_settings``: the smallest
``RLConfig`` that runs one step, with any field overridden. Not a test module (no ``test_``
prefix): the test files import it by name, as they import ``report_runs``.
"""

from __future__ import annotations

from typing import Any

from course.lib.reward_spec.problems import Problem

TOY = [
    Problem(prompt="Compute 2 + 3. Output exactly one line: Final: <int>", answer=5, kind="add", operands=(2, 3)),
    Problem(prompt="Compute 7 * 9. Output exactly one line: Final: <int>", answer=63, kind="mul", operands=(7, 9)),
]


def loop_settings(**changes: Any) -> Any:
    """One step, two prompts, no KL (beta 0), a large learning rate: the direction of an update is visible."""
    from course.lib.learning.rl_config import RLConfig  # inside: importing the loop is the test's business

    base = dict(rubric="strict", seed=0, beta=0.0, steps=1, prompts_per_step=2, group_size=4, lr=1e-2, grad_clip=1.0,
                temperature=1.0, max_tokens=6, eval_every=1, eval_samples=1, slice_items=2, holdout_samples=1,
                eval_seed=0, save_every=1, gate_min_delta=0.1)
    return RLConfig(**(base | changes))
