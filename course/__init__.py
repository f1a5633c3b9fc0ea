"""rl-foundations-llm: an offline laboratory for reinforcement learning on LLM-style tasks.

Everything in this package revolves around one instrument, ``course.instrument.spec_v1.score``.
Run ``python -m course.eval`` for the first measurement on the bundled data.
"""

__version__ = "0.1.0"
