"""The tiny LM's standard-library parts: the character vocabulary and the SFT data recipe (no torch needed)."""

from __future__ import annotations

import json
import random
import re
import string
from collections import Counter

import pytest

from course.errors import CourseError
from course.lib.bundled import DEFAULT_DATASETS, PI0_MANIFEST
from course.lib.policy.training_problems import problem_stream, read_prompts
from course.lib.records.manifest import sha256_file
from course.lib.reward_spec.problems import make_problem
from course.tinylm.sft_data import (
    FORMAT_WEIGHTS,
    HEDGED_FORMATS,
    render_target,
    sft_stream,
)
from course.tinylm.vocab import VOCAB


# --- vocabulary --------------------------------------------------------------------------
def test_vocab_round_trips_every_printable_ascii_character_and_newlines():
    text = (string.printable.replace("\r", "").replace("\x0b", "").replace("\x0c", "").replace("\t", "")
            + "\nFinal: -323\n")
    assert VOCAB.decode(VOCAB.encode(text)) == text


def test_vocab_maps_an_unknown_character_to_unk_which_decodes_to_the_replacement_character():
    ids = VOCAB.encode("Final:\u00a0323")  # NBSP is not in the table
    assert ids[6] == VOCAB.UNK
    assert VOCAB.decode(ids) == "Final:\ufffd323"


def test_strict_encode_rejects_a_character_outside_the_table():
    with pytest.raises(CourseError, match="U\\+2212"):
        VOCAB.encode("\u2212323", strict=True)


def test_special_tokens_are_named_by_token_text_and_dropped_by_decode():
    assert [VOCAB.token_text(i) for i in (VOCAB.PAD, VOCAB.BOS, VOCAB.SEP, VOCAB.EOS, VOCAB.UNK)] == [
        "<pad>", "<bos>", "<sep>", "<eos>", "<unk>"]
    assert VOCAB.decode([VOCAB.BOS, *VOCAB.encode("ab"), VOCAB.SEP, VOCAB.EOS, VOCAB.PAD]) == "ab"


def test_every_id_below_size_has_a_distinct_token_text_and_ids_beyond_are_rejected():
    texts = [VOCAB.token_text(i) for i in range(VOCAB.size)]
    assert len(set(texts)) == VOCAB.size == 101
    with pytest.raises(CourseError):
        VOCAB.token_text(VOCAB.size)


# --- the SFT data recipe -------------------------------------------------------------------
def test_every_target_format_contains_the_correct_answer_as_a_number():
    rng = random.Random(0)
    seen = set()
    for _ in range(2000):
        p = make_problem(rng)
        text, fmt = render_target(rng, p)
        seen.add(fmt)
        numbers = [int(x) for x in re.findall(r"-?[0-9]+", text)]
        assert p.answer in numbers, (fmt, text)
    assert seen == set(FORMAT_WEIGHTS)


def test_only_the_strict_format_passes_the_strict_scorer_and_hedges_mention_several_numbers():
    from course.instrument.spec_v1 import score

    rng = random.Random(1)
    for _ in range(1000):
        p = make_problem(rng)
        text, fmt = render_target(rng, p)
        r = score({"expected_answer": p.answer}, text)
        assert (r["reward"] == 1.0) == (fmt == "strict"), (fmt, text, r["details"]["error_code"])
        if fmt in HEDGED_FORMATS:
            assert len(re.findall(r"-?[0-9]+", text)) in (2, 3, 5)


def test_format_shares_of_the_sft_stream_follow_the_declared_weights():
    stream = sft_stream(0, [])
    counts = Counter(next(stream)[2] for _ in range(6000))
    for fmt, w in FORMAT_WEIGHTS.items():
        assert abs(counts[fmt] / 6000 - w) < 0.025, fmt


def test_problem_stream_skips_excluded_prompts_even_when_the_generator_repeats_them():
    # Exclude the 40 most common prompts of the unfiltered stream itself: they must never come out.
    rng = random.Random("x")
    common = [p for p, _ in Counter(make_problem(rng, "mul").prompt for _ in range(3000)).most_common(40)]
    stream = problem_stream("x", common)
    drawn = [next(stream).prompt for _ in range(3000)]
    assert not set(drawn) & set(common)


def test_shipped_pi0_training_data_is_disjoint_from_dev_and_holdout_prompts():
    manifest = json.loads(PI0_MANIFEST.read_text(encoding="utf-8"))
    # The exclusion was applied to these very dataset files (same bytes as today).
    recorded = {fp["sha256"] for fp in manifest["sft_data"]["excluded_from"]}
    assert recorded == {sha256_file(p) for p in DEFAULT_DATASETS}
    heldout = set(read_prompts(DEFAULT_DATASETS))
    assert len(heldout) == 150
    stream = sft_stream(manifest["sft_data"]["seed"], read_prompts(DEFAULT_DATASETS))
    first = [next(stream)[0].prompt for _ in range(20_000)]  # a prefix of the shipped recipe: fast, same code path
    assert not set(first) & heldout
    # ...and without the exclusion the same stream WOULD have hit dev/holdout prompts (the filter matters).
    raw = sft_stream(manifest["sft_data"]["seed"], [])
    assert set(next(raw)[0].prompt for _ in range(20_000)) & heldout


def test_rl_training_prompt_stream_is_disjoint_from_dev_and_holdout_prompts():
    heldout = read_prompts(DEFAULT_DATASETS)
    stream = problem_stream("rl-prompts:0", heldout)
    assert not {next(stream).prompt for _ in range(5000)} & set(heldout)
