"""The batch adapter (course.integrations.batch.score_batch): columns as dataframe libraries hand them
(numpy scalars and arrays, pyarrow scalars and tables, pandas, datasets.map(batched=True)) get
course.score's verdicts row by row, and an answer that is not an integer stops the batch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course.instrument.spec_v1 import score
from course.integrations.batch import OUTPUT_COLUMNS, score_batch

REPO = Path(__file__).resolve().parent.parent
DEV = REPO / "data" / "datasets" / "math_dev.jsonl"
FROZEN = REPO / "data" / "rollouts" / "frozen_rollouts_dev.jsonl"


def _dev_columns() -> dict[str, list]:
    """The 100 dev items and their frozen rollouts as two columns (Python values)."""
    answers = {json.loads(line)["id"]: json.loads(line)["expected_answer"] for line in DEV.read_text().splitlines()}
    rollouts = [json.loads(line) for line in FROZEN.read_text().splitlines()]
    return {"completion": [r["completion"] for r in rollouts], "expected_answer": [answers[r["id"]] for r in rollouts]}


def _course_verdicts(columns: dict[str, list]) -> tuple[list[float], list[str]]:
    verdicts = [score({"expected_answer": a}, c) for c, a in zip(columns["completion"], columns["expected_answer"])]
    return [v["reward"] for v in verdicts], [v["details"]["error_code"] for v in verdicts]


def test_numpy_int64_answers_score_like_python_ints_on_all_dev_rollouts():
    np = pytest.importorskip("numpy")
    columns = _dev_columns()
    rewards, codes = _course_verdicts(columns)
    out = score_batch({"completion": np.array(columns["completion"], dtype=object),
                       "expected_answer": np.array(columns["expected_answer"], dtype=np.int64)})
    assert out["reward"] == rewards and out["error_code"] == codes
    assert sum(out["reward"]) == 30  # course.eval's 30/100 on the same file


def test_numpy_string_completions_and_numpy_scalar_answers_are_read_as_text_and_integers():
    np = pytest.importorskip("numpy")
    out = score_batch({"completion": np.array(["Final: 323", "Final:63"]),
                       "expected_answer": [np.int64(323), np.uint8(63)]})
    assert out["reward"] == [1.0, 0.0] and out["error_code"] == ["ok", "prefix_spacing"]


def test_pyarrow_table_and_scalars_score_like_python_values():
    pa = pytest.importorskip("pyarrow")
    table = pa.table({"completion": ["Final: 323", "Final: 7"], "expected_answer": pa.array([323, 8], pa.int64())})
    out = score_batch(table)
    assert out["reward"] == [1.0, 0.0] and out["error_code"] == ["ok", "wrong_answer"]
    text_answers = score_batch({"completion": ["Final: 323"], "expected_answer": [pa.scalar("323")]})
    assert text_answers["reward"] == [1.0] and text_answers["extracted"] == ["323"]


def test_a_null_arrow_answer_is_refused_naming_the_row():
    pa = pytest.importorskip("pyarrow")
    with pytest.raises(ValueError, match=r"expected_answer\[1\]: the expected answer is null"):
        score_batch({"completion": ["Final: 1", "Final: 2"], "expected_answer": pa.array([1, None], pa.int64())})


def test_pandas_dataframe_gets_the_columns_it_can_assign():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"completion": ["Final: 323", "The answer is 5"], "expected_answer": [323, 5]})
    scored = df.assign(**score_batch(df))
    assert list(scored["reward"]) == [1.0, 0.0]
    assert list(scored["error_code"]) == ["ok", "missing_prefix"]
    assert set(OUTPUT_COLUMNS) <= set(scored.columns)


def test_a_float_answer_from_a_pandas_column_with_a_missing_value_is_refused_loudly():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"completion": ["Final: 323", "Final: 5"], "expected_answer": [323, None]})  # float64: 323.0, NaN
    with pytest.raises(ValueError, match=r"expected_answer\[0\]: the expected answer 323.0 is a float, not an integer"):
        score_batch(df)


def test_datasets_map_batched_adds_the_verdict_columns():
    datasets = pytest.importorskip("datasets")
    columns = _dev_columns()
    rewards, codes = _course_verdicts(columns)
    scored = datasets.Dataset.from_dict(columns).map(score_batch, batched=True, batch_size=16)
    assert scored["reward"] == rewards and scored["error_code"] == codes
    numpy_batches = (datasets.Dataset.from_dict(columns).with_format("numpy")
                     .map(score_batch, batched=True, batch_size=16))
    assert [float(r) for r in numpy_batches["reward"]] == rewards


def test_a_huge_extracted_integer_is_kept_as_text_an_arrow_column_can_hold():
    datasets = pytest.importorskip("datasets")
    big = "9" * 40
    scored = (datasets.Dataset.from_dict({"completion": [f"Final: {big}"], "expected_answer": [1]})
              .map(score_batch, batched=True))
    assert scored["extracted"] == [big] and scored["error_code"] == ["wrong_answer"]


@pytest.mark.parametrize("answer", ["3.5", 1.0, None, True, "1,000"])
def test_an_answer_that_is_not_an_integer_stops_the_batch_instead_of_scoring_zero(answer):
    with pytest.raises(ValueError, match=r"expected_answer\[0\]"):
        score_batch({"completion": ["Final: 1"], "expected_answer": [answer]})


def test_columns_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="2 value"):
        score_batch({"completion": ["Final: 1", "Final: 2"], "expected_answer": [1]})


def test_a_missing_column_is_named():
    with pytest.raises(KeyError, match="expected_answer"):
        score_batch({"completion": ["Final: 1"], "answer": [1]})


def test_conversational_completions_are_scored_on_the_last_reply_with_parts_joined():
    out = score_batch({"completion": [[{"role": "assistant", "content": [{"type": "text", "text": "Final: "},
                                                                        {"type": "text", "text": "66"}]}]],
                       "expected_answer": [66]})
    assert out["reward"] == [1.0] and out["error_code"] == ["ok"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=30), st.integers(-10**6, 10**6)), max_size=8))
def test_every_row_gets_course_scores_verdict(rows):
    columns = {"completion": [c for c, _ in rows], "expected_answer": [a for _, a in rows]}
    out = score_batch(columns)
    rewards, codes = _course_verdicts(columns)
    assert out["reward"] == rewards and out["error_code"] == codes
    assert all(len(out[name]) == len(rows) for name in OUTPUT_COLUMNS)
