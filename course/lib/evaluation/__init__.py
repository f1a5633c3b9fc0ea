"""Loop A, evaluation: score frozen completions, summarise them, look inside, refuse unfair comparisons.

``pipeline`` (a completions file scored into a run directory), ``summary`` (counts, the pass-rate
line, summary.json and summary.md), ``inspection`` (outcome codes and real examples of each),
``locked_room`` (the gate's same-conditions check and its promotion decision), ``shards`` (part K of N
of a run, and the merge that gives back the one-process run) and ``distribution_shift`` (a policy's
fresh samples beside its frozen rollouts: Loop C's policy measured on its own samples).
"""
