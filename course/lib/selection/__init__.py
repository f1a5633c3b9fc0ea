"""Loop B, selection: best-of-N over samples of one policy, which chooses and never learns.

``best_of_n`` (one item's samples scored, ``pick_best`` choosing, exact pass@k), ``pipeline``
(best-of-N over a pack, written as a run directory), ``policy_comparison`` (several policies
on the same items, side by side) and ``passk_estimators`` (pass@k three ways: bias and variance).
"""
