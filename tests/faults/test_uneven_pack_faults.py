"""Fault suite, issue 41 item 8: a selection pack is imported with the same number of samples per item.

The attack: an lm-eval samples file (``repeats: 3``) with 2 generations for one document, or an
inspect log whose last epoch of one sample is missing, imported with ``--pack``: it was written with
exit 0 as a pack that ``course.eval`` then refuses. ``course.import_completions`` now refuses it, one
line naming the item and the counts, nothing written (``rollout_readers.same_samples_per_item``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from course.errors import CourseError
from course.import_completions import main as import_main
from course.lib.external.rollout_readers import Row, same_samples_per_item

ROOT = Path(__file__).resolve().parents[2]
BRIDGES = ROOT / "tests" / "data" / "bridges"


def _samples_with_repeats(tmp_path: Path, counts: list[int]) -> Path:
    lines = (BRIDGES / "lmeval_samples_course_math.jsonl").read_text(encoding="utf-8").splitlines()
    out = []
    for line, count in zip(lines, counts):
        record = json.loads(line)
        record["resps"] = [[record["resps"][0][0]] * count]
        out.append(json.dumps(record))
    path = tmp_path / "samples.jsonl"
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("counts, odd, words", [
    ([3, 3, 2, 3, 3], "dev-0003", "has 2 samples, 4 other items have 3 (counts 2: 1 items, 3: 4 items)"),
    ([1, 4, 4, 4, 4], "dev-0001", "has 1 sample, 4 other items have 4"),
])
def test_an_lm_eval_pack_with_uneven_repeats_is_refused_at_import_naming_the_item_and_the_counts(
        tmp_path: Path, capsys, counts: list[int], odd: str, words: str) -> None:
    source, pack = _samples_with_repeats(tmp_path, counts), tmp_path / "pack.jsonl"
    assert import_main(["--format", "lm-eval", str(source), "--policy", "m", "--pack", "--out", str(pack)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"item '{odd}' {words}" in err[0], err
    assert not pack.exists()


def test_an_lm_eval_pack_with_even_repeats_still_imports(tmp_path: Path) -> None:
    source, pack = _samples_with_repeats(tmp_path, [3] * 5), tmp_path / "pack.jsonl"
    assert import_main(["--format", "lm-eval", str(source), "--policy", "m", "--pack", "--out", str(pack)]) == 0
    assert [len(json.loads(line)["samples"]) for line in pack.read_text(encoding="utf-8").splitlines()] == [3] * 5


def test_an_inspect_sample_without_its_last_epoch_is_named_with_its_count() -> None:
    # inspect's reader refuses a gap (epochs 1 and 3); a sample missing only its last epoch is even-looking
    # epoch by epoch, and is caught by the count: what read_inspect hands over for a log with epochs=3.
    rows = [Row("log.eval#dev-0001", "dev-0001", "a", None, ("b", "c")),
            Row("log.eval#dev-0002", "dev-0002", "a", None, ("b",)),
            Row("log.eval#dev-0003", "dev-0003", "a", None, ("b", "c"))]
    with pytest.raises(CourseError, match=r"^log.eval#dev-0002: item 'dev-0002' has 2 samples, 2 other items have 3"):
        same_samples_per_item(rows)
