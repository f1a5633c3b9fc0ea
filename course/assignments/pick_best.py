"""Loop B exercise: the selection rule of best-of-N.

``course.selection_demo`` scores the first N samples of each prompt with the
strict verifier and asks ``pick_best`` which one to keep. Selection spends more
sampling compute to choose a better *output*; it never changes the policy that
produced the samples (that would be Loop C, learning).

Each sample handed to ``pick_best`` is a dict::

    {"sample_index": 2, "sample_id": "dev-0001#2", "completion": "Final: 323",
     "reward": 1.0, "details": {...the scorer's details...}}

Check your version against the contract::

    python -m pytest tests/test_assignments.py
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

Sample = Mapping[str, Any]

# The rule this file implements, recorded in every selection run's manifest.
SELECTION_RULE = "max reward; ties -> lowest sample_index"


# ============================================================================
# STUDENT EXERCISE — the one function you may edit (keep it 5-15 lines).
# Contract (tests/test_assignments.py checks it for any implementation):
#   1. return one of the given samples (the object itself, not a copy);
#   2. its reward is the maximum reward among the samples;
#   3. ties are broken deterministically: the lowest sample_index wins, so a
#      repeated run picks the same sample (the instructor diffs two runs live).
# If you change the rule, change SELECTION_RULE too: the manifest records it.
# ============================================================================
def pick_best(samples: Sequence[Sample]) -> Sample:
    """Return the sample with the highest reward; on a tie, the lowest sample_index.

    >>> a = {"sample_index": 0, "reward": 0.0}
    >>> b = {"sample_index": 1, "reward": 1.0}
    >>> c = {"sample_index": 2, "reward": 1.0}
    >>> pick_best([a, b, c]) is b
    True
    """
    if not samples:
        raise ValueError("pick_best needs at least one sample")
    best = samples[0]
    for sample in samples[1:]:
        better = sample["reward"] > best["reward"]
        tie_but_earlier = (
            sample["reward"] == best["reward"] and sample["sample_index"] < best["sample_index"]
        )
        if better or tie_but_earlier:
            best = sample
    return best
# ============================================================================


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.assignments.pick_best"))
