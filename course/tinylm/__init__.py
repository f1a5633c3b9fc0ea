"""A tiny character-level language model: the course's real Loop C policy.

Modules (each opens with the command that runs it):
  vocab    characters <-> token ids (standard library only)
  model    the transformer (PyTorch)
  sft_data the seeded supervised data recipe for the reference policy pi0 (standard library only)
  sft      trains pi0 and writes data/tinylm/pi0.pt + its manifest
  policy   batching, sampling and log-probabilities on top of the model
  sample   CLI: rollouts in the frozen-rollouts / selection-pack formats
  rl       CLI: REINFORCE with a group baseline and a KL leash to pi0
  sweep    CLI: the beta sweep (final reward against KL to pi0)
  shift    CLI: error codes of frozen pi0 rollouts beside fresh samples of a trained policy
           (the table itself is course.lib.evaluation.distribution_shift: it needs no model)

PyTorch (with numpy and matplotlib) is the optional ``lm`` extra. Every tinylm tool
that needs it calls ``course.lib.extras.require("lm", "the tiny LM")`` right after
parsing its arguments: one line, exit 2, before any work (the course's one rule).
The shipped pi0, its manifest and its frozen rollouts are named in ``course.lib.bundled``.
"""

from __future__ import annotations

# Completion length limit: the context is 192 tokens and the course's prompts are at most 140
# characters (course.lib.reward_spec.problems.MAX_PROMPT_CHARS), so <bos> + 140 + <sep> + 48 + <eos> still fits.
# Longer prompts (other datasets) are cropped from the left; sample.py counts them.
MAX_TOKENS_LIMIT = 48


