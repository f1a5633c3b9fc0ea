"""Reference learning curves: a stored run's reward, KL and no-signal curves, and the bands a rerun must stay in.

A change to Loop C can weaken learning without breaking anything a unit test sees: a sign, a
normaliser, a learning rate, a baseline that leaks. The curves catch it. A reference file
(``tests/data/reference_curves/<name>.json``, written by ``scripts/make_reference_curves.py``) holds:

  * the command (a tool and its arguments; the run directory is ``OUT``),
  * the per-step curves of that command for a few seeds (``reward``, ``kl_k3_per_token``,
    ``no_signal_groups``, and the fixed dev slice's strict pass at each evaluation),
  * for each checked STATISTIC of the curves, the reference value (the first seed's), the band and
    the direction in which a rerun may not leave it.

Why statistics of windows and not the curve point by point: on the same machine with the same
thread count a rerun is byte-identical (the course's determinism guarantee), but another CPU or
BLAS sums floats in another order, a sampled token flips somewhere, and from then on the run is a
different draw of the same experiment: like another seed. A point-by-point band wide enough for
that would be useless; a mean over a third of the run is stable. Why these bands: each is twice
the range the statistic spans over the reference seeds (what another draw of the same recipe
does), with a floor that says what change is too small to matter (``FLOORS``). A rerun inside
every band learned as the recipe does; a rerun outside one is a different recipe. The bands are
one-sided where only one direction is a regression: the reward's late level and its gain must not
DROP, the no-signal share must not RISE; the KL is two-sided (no KL: the policy did not move;
far more: the leash broke).

Standard library only (the comparison is the test's; running the tools is the script's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

CURVES = ("reward", "kl_k3_per_token", "no_signal_groups")

# statistic -> (direction, floor of its band, what it says). Direction: "min" = the rerun may not fall
# more than the band below the reference; "max" = not rise more than the band above; "both" = neither.
STATISTICS: dict[str, tuple[str, float, str]] = {
    "reward_late": ("min", 0.05, "mean training reward over the last third of the steps: how far learning got"),
    "reward_gain": ("min", 0.05, "that, minus the mean over the first third: how much the run learned"),
    "kl_late": ("both", 0.02, "mean k3 KL per token to the reference over the last third: how far the policy moved"),
    "no_signal": ("max", 0.10, "mean share of groups with all rewards equal: how often the reward taught nothing"),
}
FLOORS = {name: floor for name, (_, floor, _) in STATISTICS.items()}
BAND_SPREADS = 2.0  # a band is this many times the range of the statistic over the reference seeds (or its floor)


@dataclass(frozen=True)
class Check:
    """One statistic of a rerun against the reference: inside its band or not."""

    statistic: str
    value: float
    reference: float
    band: float
    direction: str
    ok: bool

    def line(self) -> str:
        """One line for a failing test or the script's output."""
        allowed = {"min": f">= {self.reference - self.band:.4f}", "max": f"<= {self.reference + self.band:.4f}",
                   "both": f"within {self.reference:.4f} +/- {self.band:.4f}"}[self.direction]
        return (f"{self.statistic} {self.value:.4f} (reference {self.reference:.4f}, must be {allowed}): "
                f"{'ok' if self.ok else 'OUTSIDE THE BAND'} -- {STATISTICS[self.statistic][2]}")


def curves_of(log: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The per-step curves of an rl_log.jsonl (its records, step 0 included) and the slice's evaluations."""
    steps = [r for r in log if r["step"] > 0]
    out: dict[str, Any] = {name: [r[name] for r in steps] for name in CURVES}
    out["slice_strict_pass"] = [[r["step"], r["eval"]["slice_strict_pass"]] for r in log if "eval" in r]
    return out


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def statistics(curves: Mapping[str, Sequence[Any]]) -> dict[str, float]:
    """The checked statistics of one run's curves.

    >>> s = statistics({"reward": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5], "kl_k3_per_token": [0, 0, 0, 0, 0.1, 0.3],
    ...                 "no_signal_groups": [1, 1, 0.5, 0.5, 0, 0]})
    >>> {k: round(v, 4) for k, v in s.items()}
    {'reward_late': 0.45, 'reward_gain': 0.4, 'kl_late': 0.2, 'no_signal': 0.5}
    """
    r = list(curves["reward"])
    third = max(1, len(r) // 3)
    late = _mean(r[-third:])
    return {"reward_late": late, "reward_gain": late - _mean(r[:third]),
            "kl_late": _mean(list(curves["kl_k3_per_token"])[-third:]),
            "no_signal": _mean(list(curves["no_signal_groups"]))}


def bands(per_seed: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Each statistic's band from the reference seeds' values: BAND_SPREADS x their range, at least its floor.

    >>> bands([{"reward_late": 0.40, "reward_gain": 0.2, "kl_late": 0.1, "no_signal": 0.3},
    ...        {"reward_late": 0.46, "reward_gain": 0.25, "kl_late": 0.1, "no_signal": 0.3}])["reward_late"]
    0.12
    """
    return {name: round(max(FLOORS[name],
                            BAND_SPREADS * (max(s[name] for s in per_seed) - min(s[name] for s in per_seed))), 6)
            for name in STATISTICS}


def reference_checks(per_seed: Sequence[Mapping[str, float]]) -> dict[str, dict[str, Any]]:
    """What a reference file stores per statistic: the first seed's value, the band, the direction, why."""
    b = bands(per_seed)
    return {name: {"reference": round(per_seed[0][name], 6), "band": b[name], "direction": d, "what": what}
            for name, (d, _, what) in STATISTICS.items()}


def compare(curves: Mapping[str, Sequence[Any]], checks: Mapping[str, Mapping[str, Any]]) -> list[Check]:
    """A rerun's curves against a reference file's checks, one Check per statistic.

    >>> ref = {"reward_late": {"reference": 0.4, "band": 0.1, "direction": "min"}}
    >>> c = compare({"reward": [0.0, 0.1, 0.2], "kl_k3_per_token": [0, 0, 0], "no_signal_groups": [1, 1, 1]}, ref)
    >>> c[0].ok, round(c[0].value, 2)
    (False, 0.2)
    """
    stats = statistics(curves)
    out = []
    for name, c in checks.items():
        v, ref, band, d = stats[name], c["reference"], c["band"], c["direction"]
        eps = 1e-9  # (a value exactly on the edge of its band is inside it)
        ok = {"min": v >= ref - band - eps, "max": v <= ref + band + eps, "both": abs(v - ref) <= band + eps}[d]
        out.append(Check(name, v, ref, band, d, ok))
    return out


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.learning.reference_curves"))
