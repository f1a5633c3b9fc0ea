"""The Goodhart alarm of Loop C: the training reward rising while the goal, measured on a fixed slice, falls.

A training reward is a proxy for the goal (the strict pass rate). ``course.lib.learning.rl_loop``'s slice watch
evaluates a fixed math_dev slice every few steps and asks this module, after each evaluation, whether the two
moved apart; the run's log, summary and report carry the words it returns.
"""

from __future__ import annotations

from typing import Any


def goodhart_alarm(evals: list[dict[str, Any]], window: int = 3, threshold: float = 0.03) -> str:
    """Words when, over the last ``window`` evaluations, training reward rose while strict pass fell.

    Compares the newest evaluation with the one ``window - 1`` evaluations earlier:
    the mean training reward of the steps before each (the interval since the
    evaluation before it) and the strict pass rate on the fixed slice. Both moves
    must exceed ``threshold`` so that sampling noise alone rarely trips it.

    >>> e = [{"step": 10, "train_reward_interval": 0.4, "slice_strict_pass": 0.30},
    ...      {"step": 15, "train_reward_interval": 0.5, "slice_strict_pass": 0.28},
    ...      {"step": 20, "train_reward_interval": 0.6, "slice_strict_pass": 0.22}]
    >>> goodhart_alarm(e)  # doctest: +NORMALIZE_WHITESPACE
    'training reward rose 0.400 -> 0.600 (steps 10 -> 20) while the strict pass rate on the fixed slice fell
     0.300 -> 0.220: the proxy is being optimised at the expense of the goal'
    >>> goodhart_alarm(e[:2])
    ''
    """
    if len(evals) < window:
        return ""
    old, new = evals[-window], evals[-1]
    r_old, r_new = old.get("train_reward_interval"), new.get("train_reward_interval")
    if r_old is None or r_new is None:
        return ""
    s_old, s_new = old["slice_strict_pass"], new["slice_strict_pass"]
    if r_new - r_old > threshold and s_old - s_new > threshold:
        return (
            f"training reward rose {r_old:.3f} -> {r_new:.3f} (steps {old['step']} -> {new['step']}) while the strict "
            f"pass rate on the fixed slice fell {s_old:.3f} -> {s_new:.3f}: the proxy is being optimised at the "
            "expense of the goal"
        )
    return ""


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.learning.goodhart"))
