"""How Loop C's microscopes write numbers and completions into the stories a student reads.

The bandit (``python -m course.bandit_train``), the two-step MDP (``python -m
course.toy_mdp``) and the KL trade-off (``python -m course.kl_tradeoff_demo``)
print the same kinds of things: a completion that must be shown unambiguously,
the direction a probability moved, a short vector of logits, a paragraph wrapped
to the width of a terminal. Each is written once here, so the three stories read
alike and a fix reaches all of them. Pure functions returning strings; the maths
is in ``course.lib.learning.policy_gradient``.

>>> quote('Final: 323\\n')
'"Final: 323\\\\n"'
>>> print(quote('Final:\\u00a0\\u2212323\\x1b[2J'))
"Final:⟨U+00A0⟩⟨U+2212⟩323⟨U+001B⟩[2J"
>>> arrow(0.02), arrow(-1e-15), arrow(-0.3)
('up', 'same', 'down')
>>> vector([0.5, -0.25])
'[+0.500, -0.250]'
"""

from __future__ import annotations

import textwrap
from typing import Sequence

from course.lib.visible import visible

WIDTH = 100  # the width prose is wrapped to: a terminal, and a page of the run's story file

# Below this a probability "did not move": softmax arithmetic leaves ~1e-17 crumbs.
SAME = 1e-12


def quote(text: str) -> str:
    """A completion shown unambiguously: in double quotes, with backslash, newline, tab and quote escaped,
    and every other character outside printable ASCII (a look-alike, an ESC, a bidi override) written as
    ``course.lib.visible`` writes it: ``--action`` texts are the user's, and they reach the terminal."""
    escaped = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t").replace('"', '\\"')
    return '"' + visible(escaped) + '"'


def arrow(delta: float) -> str:
    """'up', 'down' or 'same': which way a probability moved in one update."""
    if delta > SAME:
        return "up"
    if delta < -SAME:
        return "down"
    return "same"


def vector(xs: Sequence[float]) -> str:
    """A short vector of logits or gradients, signed, 3 decimals."""
    return "[" + ", ".join(f"{x:+.3f}" for x in xs) + "]"


def wrap(text: str) -> list[str]:
    """A paragraph as lines of at most ``WIDTH`` characters."""
    return textwrap.wrap(text, width=WIDTH)


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.lib.learning.narration"))
