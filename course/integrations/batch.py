"""The strict verifier over a batch of columns: the public surface for dataframes (pandas, Hugging Face
``datasets``, Ray Data, pyarrow tables).

A dataframe library hands a batch as columns, and each column holds its own types: Ray Data and
``datasets`` give ``expected_answer`` as ``numpy.int64`` (or a pyarrow scalar), pandas as a numpy
integer, and a text column as ``numpy.str_``. ``course.instrument.spec_v1.score`` takes a Python
``int`` only, so calling it row by row on such a batch named every row ``bad_example``: a reward
of 0 on every row, silently. ``score_batch`` reads every answer the way the bridges do
(``course.integrations.expected.library_answer``: any integer type, a string of digits) and
every completion by the one rule for message text (``course.lib.external.messages``), and
refuses a batch with an answer that is not an integer (``323.0``, ``"3.5"``, a missing value)
with a ``ValueError`` naming the row: a data problem stops the job instead of becoming zeros.

It returns new columns only, one value per row, in plain Python types every dataframe library
stores (``extracted`` is text: an extracted integer may be longer than an Arrow int64)::

    df.assign(**score_batch(df))                                        # pandas
    ds.map(score_batch, batched=True)                                   # datasets: adds the columns
    ds.map_batches(lambda b: {**b, **score_batch(b)}, batch_format="numpy")   # Ray Data

>>> score_batch({"completion": ["Final: 323", "Final:63"], "expected_answer": [323, "63"]})["reward"]
[1.0, 0.0]

The verdicts are ``course.score``'s, row by row (tests/test_bridges_batch.py checks it).
"""

from __future__ import annotations

from typing import Any

from course.instrument.spec_v1 import score
from course.integrations.expected import integer_answers
from course.lib.external.messages import completion_text

COMPLETION_COLUMN = "completion"
ANSWER_COLUMN = "expected_answer"
OUTPUT_COLUMNS = ("reward", "error_code", "parsed", "extracted", "reason", "scorer_version")


def _column(batch: Any, name: str) -> list[Any]:
    """One column of ``batch`` as a list (a list, numpy array, pandas Series, Arrow array or chunked array)."""
    try:
        values = batch[name]
    except (KeyError, IndexError, TypeError) as exc:
        names = getattr(batch, "column_names", None) or (list(batch.keys()) if hasattr(batch, "keys") else None)
        raise KeyError(f"score_batch needs the column {name!r}; the batch has {names}") from exc
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise ValueError(f"score_batch: column {name!r} is a single {type(values).__name__}, not a column of values")
    return list(values)


def _text(value: Any) -> Any:
    """A completion as the scorer reads it: an Arrow string scalar is its text; a conversation its last reply."""
    if type(value).__module__.startswith("pyarrow") and callable(getattr(value, "as_py", None)):
        value = value.as_py()
    return completion_text(value)


def score_batch(batch: Any, *, completion_column: str = COMPLETION_COLUMN,
                answer_column: str = ANSWER_COLUMN) -> dict[str, list[Any]]:
    """Score every row of ``batch`` (a mapping of columns, or a dataframe) with the strict verifier.

    Returns ``{"reward", "error_code", "parsed", "extracted", "reason", "scorer_version"}``, each a
    list with one value per row. Raises ``ValueError`` when the two columns differ in length or
    an answer is not an integer, and ``KeyError`` when a column is missing.
    """
    completions = _column(batch, completion_column)
    expected = _column(batch, answer_column)
    if len(completions) != len(expected):
        raise ValueError(f"score_batch: {len(completions)} value(s) of {completion_column!r} and {len(expected)} "
                         f"of {answer_column!r}: one expected answer per completion")
    answers = integer_answers(expected, f"score_batch: {answer_column}", "the strict verifier scores integer "
                              "answers only, and a batch with one that is not is refused rather than scored 0")
    out: dict[str, list[Any]] = {name: [] for name in OUTPUT_COLUMNS}
    for row, (answer, completion) in enumerate(zip(answers, completions)):
        try:
            text = _text(completion)
        except ValueError as exc:
            raise ValueError(f"score_batch: {completion_column}[{row}] is {exc}") from None
        verdict = score({"expected_answer": answer}, text)
        details = verdict["details"]
        extracted = details.get("extracted")
        out["reward"].append(float(verdict["reward"]))
        out["error_code"].append(details["error_code"])
        out["parsed"].append(bool(details.get("parsed")))
        out["extracted"].append(None if extracted is None else str(extracted))
        out["reason"].append(details["reason"])
        out["scorer_version"].append(details["scorer_version"])
    return out


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.integrations.batch"))
