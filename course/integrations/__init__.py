"""Bridges from the course's instrument to the tools practitioners train and evaluate with.

Each module wraps ``course.instrument.spec_v1.score`` (the strict ``Final: <int>`` verifier) in the
shape one outside library expects, and imports that library lazily, so the
core keeps working without it:

  * ``course.integrations.trl``        a GRPOTrainer reward function (extra ``trl``)
  * ``course.integrations.verl``       verl's ``compute_score`` custom reward (no extra: verl calls it)
  * ``course.integrations.inspect_ai`` an inspect_ai ``@scorer`` and ``@task`` (extra ``inspect``)
  * ``course.integrations.lm_eval``    lm-evaluation-harness tasks whose metric is the scorer (extra ``lmeval``)
  * ``course.integrations.batch``      ``score_batch``: columns of a dataframe (pandas, datasets, Ray Data)

and one engine: ``course.integrations.ray`` runs the shards of an evaluation as Ray tasks (extra ``ray``).

All of them read the expected answer through ``course.integrations.expected``: the encodings
of an integer these libraries really pass (``"323"``, ``numpy.int64``, a pyarrow scalar) are
integers, and anything else is named, never a silent reward of 0; and a message's text through
``course.lib.external.messages`` (text parts joined with nothing in between, in every bridge).

The reverse direction (outside data and outputs in) is ``python -m course.datasets``
and ``python -m course.import_completions``.
"""
