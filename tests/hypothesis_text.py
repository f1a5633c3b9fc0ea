"""The text the property tests draw: any string of code points UTF-8 can encode (all but surrogates).

That is what hypothesis's ``st.text()`` draws by default, and it is spelled out here for speed.
The default alphabet is ``st.characters(codec="utf-8")``. On a machine with no ``.hypothesis/``
cache yet (a fresh clone, so every CI run) hypothesis works that set out by encoding all
1,114,112 code points one at a time: ~3 s, paid again in each pytest-xdist worker. Naming the
same set by Unicode category (everything except ``Cs``, the surrogates) costs nothing.

Hypothesis still builds that table once, in the one worker that runs test_score_properties: its
values of any type include some (``UnicodeTranslateError``, say) that hypothesis draws with the
default alphabet, and that fuzzing is worth keeping as it is.
"""

from __future__ import annotations

from hypothesis import strategies as st

CHARACTERS = st.characters(exclude_categories=("Cs",))


def text(*, min_size: int = 0, max_size: int | None = None) -> st.SearchStrategy[str]:
    """``st.text(min_size=..., max_size=...)``, drawing from the same characters."""
    return st.text(CHARACTERS, min_size=min_size, max_size=max_size)
