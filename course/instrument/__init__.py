"""The instrument layer: the code that decides a reward, sealed off from everything else.

``spec_v1`` holds the rules of reward spec v1 (``score``, the ``Verdict`` shape
and its builder, ``SCORER_VERSION``, ``ERROR_CODES``) and imports only the
standard library; the scorer fingerprint every run records is the sha256 of
exactly that file. ``rubrics`` is the one registry of reward rubrics (strict
and the deliberately hackable ones), each a ``Rubric(name, score, version,
loophole)`` returning the same ``Verdict``, plus the fingerprint functions.

This layer is the bottom of the house: it imports nothing from the rest of
``course`` (``tests/test_architecture.py`` checks), so every other layer may
import it and a change elsewhere can never change a verdict.
"""
