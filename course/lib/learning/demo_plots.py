"""The figures of Loop C's microscopes: bandit learning curve, baseline ablation, two-step MDP, KL trade-off.

Each function takes ``pyplot`` and plain numbers and returns the matplotlib Figure
(saving is ``course.lib.reporting.plotting.plot_to``'s job), so a test can inspect titles,
axis labels and legends before anything is written. The rules every figure here
keeps, because a plot a student misreads teaches the wrong thing:

  * a title, and axis labels that say the unit;
  * a legend entry for every line, placed outside the axes so it hides none;
  * tick labels that do not overlap (log scales, few ticks, or rotation);
  * a y axis that starts at 0 wherever a probability or a 0/1 reward rate is shown.

Used by ``python -m course.bandit_train --plot`` (and ``--ablation --plot``),
``python -m course.toy_mdp --plot`` and ``python -m course.kl_tradeoff_demo --plot``.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

# Where a legend goes: to the right of the axes, outside them (savefig uses bbox_inches="tight").
_OUTSIDE = {"loc": "upper left", "bbox_to_anchor": (1.02, 1.0), "fontsize": 8, "borderaxespad": 0.0}


def bandit_learning_curve(
    plt: Any,
    steps: Sequence[int],
    expected_reward: Sequence[float],
    mean_reward: Sequence[float],
    baseline: Sequence[float],
    title: str,
) -> Any:
    """Exact J(theta), the mean sampled reward so far and the baseline b, per step."""
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(steps, expected_reward, label="exact J(theta) before the update")
    ax.plot(steps, mean_reward, label="mean sampled reward so far", alpha=0.8)
    ax.plot(steps, baseline, label="baseline b", linestyle="--", alpha=0.8)
    ax.set_xlabel("step (one update per sampled completion)")
    ax.set_ylabel("reward (0 = rejected, 1 = accepted)")
    ax.set_ylim(0.0, 1.05)
    ax.set_title(title, fontsize=9)
    ax.legend(**_OUTSIDE)
    return fig


def ablation_variances(
    plt: Any, scenarios: Sequence[tuple[str, Mapping[str, Mapping[str, float | None]]]], baselines: Sequence[str]
) -> Any:
    """Grouped bars, one panel per scenario: the variance of the gradient estimate under each baseline.

    ``scenarios``: (panel title, {row name: {baseline name: variance}}); the bars of a row are
    drawn in the order of ``baselines``. The y axis is logarithmic because the variances span
    several orders of magnitude (b* at a trained policy is ~1e-6, no baseline early on ~1e-2).
    """
    fig, axes = plt.subplots(1, len(scenarios), figsize=(6.5 * len(scenarios), 4.5), squeeze=False)
    width = 0.8 / max(len(baselines), 1)
    for ax, (title, rows) in zip(axes[0], scenarios):
        names = list(rows)
        for j, baseline in enumerate(baselines):
            xs = [i + (j - (len(baselines) - 1) / 2) * width for i in range(len(names))]
            heights = [rows[name].get(baseline) for name in names]
            # A missing value (no training step in that phase) is simply not drawn.
            pairs = [(x, h) for x, h in zip(xs, heights) if h is not None and h > 0]
            ax.bar([x for x, _ in pairs], [h for _, h in pairs], width=width, label=baseline)
        ax.set_yscale("log")
        empty = {name for name in names if all(rows[name].get(b) is None for b in baselines)}
        ax.set_xticks(range(len(names)))
        # Row names are short phrases broken into lines ("exact\ntheta = 0"): horizontal, never colliding.
        ax.set_xticklabels([f"{n}\n(no steps)" if n in empty else n for n in names], fontsize=7)
        ax.set_ylabel("variance of the gradient estimate\n(per logit, mean over logits; reward^2, log scale)")
        ax.set_title(title, fontsize=9)
    axes[0][-1].legend(title="baseline", **_OUTSIDE)
    fig.suptitle("what each baseline does to the noise of the one-sample REINFORCE estimate", fontsize=10)
    return fig


def toy_mdp_curves(
    plt: Any,
    episodes: Sequence[int],
    expected_return: Sequence[float],
    q_values: Sequence[Sequence[float]],
    probabilities: Mapping[str, Sequence[float]],
    title: str,
) -> Any:
    """Left: exact expected return and Q(a1) per episode. Right: the policy's probabilities."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4))
    left.plot(episodes, expected_return, label="exact expected return J")
    for a1 in range(len(q_values[0]) if q_values else 0):
        left.plot(episodes, [q[a1] for q in q_values], linestyle="--", label=f"exact Q(a1 = {a1})")
    left.set_xlabel("episode (one update per trajectory)")
    left.set_ylabel("return (reward units of the table R(a1, a2))")
    left.set_title("credit reaches the first step through the return", fontsize=9)
    left.legend(**_OUTSIDE)
    for name, ys in probabilities.items():
        right.plot(episodes, ys, label=name)
    right.set_xlabel("episode (one update per trajectory)")
    right.set_ylabel("probability (0 to 1)")
    right.set_ylim(0.0, 1.05)
    right.set_title("the policy, step 1 and step 2", fontsize=9)
    right.legend(**_OUTSIDE)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def kl_tradeoff(
    plt: Any,
    betas: Sequence[float],
    expected_reward: Sequence[float],
    kl: Sequence[float],
    reference_reward: float,
) -> Any:
    """Left: E_pi[r] against KL(pi || pi_ref), one point per beta. Right: both against beta (log scale)."""
    import math

    order = sorted(range(len(betas)), key=lambda i: betas[i])
    betas = [betas[i] for i in order]
    expected_reward = [expected_reward[i] for i in order]
    kl = [kl[i] for i in order]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4))
    left.plot(kl, expected_reward, marker="o", label="optimum for one beta")
    # Label a point only if it is not on top of one already labelled (beta -> 0 and beta -> inf bunch up).
    span = max(max(kl), 1e-12)
    labelled: list[tuple[float, float]] = []
    for b, x_kl, y in zip(betas, kl, expected_reward):
        x = x_kl / span
        if all(math.hypot(x - lx, y - ly) > 0.06 for lx, ly in labelled):
            left.annotate(f"beta={b:g}", (x_kl, y), fontsize=7, xytext=(4, -9), textcoords="offset points")
            labelled.append((x, y))
    left.scatter([0.0], [reference_reward], marker="s", color="black", label="pi_ref (beta -> infinity)")
    left.set_xlabel("KL(pi || pi_ref) (nats)")
    left.set_ylabel("expected reward E_pi[r] (probability of reward 1)")
    left.set_ylim(0.0, 1.05)
    left.set_title("the trade-off: reward bought with divergence", fontsize=9)
    left.legend(loc="lower right", fontsize=8)  # the curve rises and bends left: that corner stays empty

    reward_line = right.plot(betas, expected_reward, marker="o", color="C0", label="E_pi[r] (left axis)")
    right.set_xscale("log")  # betas span 1e-3 .. 1e3: evenly spaced decades, labels that never collide
    right.set_xlabel("beta (KL penalty strength, log scale)")
    right.set_ylabel("expected reward E_pi[r] (probability of reward 1)")
    right.set_ylim(0.0, 1.05)
    twin = right.twinx()
    kl_line = twin.plot(betas, kl, marker="s", color="C1", label="KL(pi || pi_ref) (right axis)")
    twin.set_ylabel("KL(pi || pi_ref) (nats)")
    twin.set_ylim(bottom=0.0)
    right.set_title("stronger penalty: less reward, less drift", fontsize=9)
    lines = reward_line + kl_line
    right.legend(lines, [line.get_label() for line in lines], loc="upper left", bbox_to_anchor=(1.15, 1.0), fontsize=8)
    fig.tight_layout()
    return fig


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.learning.demo_plots"))
