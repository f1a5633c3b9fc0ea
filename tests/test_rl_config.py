"""course.lib.learning.rl_config: Loop C's settings declared once, and the flags generated from them
(course.cli.add_settings_flags, settings_from_args)."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import asdict, dataclass, replace
from typing import Any, Callable

import pytest

from course.cli import add_settings_flags, settings_from_args
from course.errors import CourseError
from course.lib.learning.rl_config import LLM, TINYLM, RLConfig, setting


def test_the_tiny_lm_tool_parses_to_exactly_the_tinylm_preset() -> None:
    from course.tinylm import rl

    assert rl.settings(rl.build_parser().parse_args([])) == TINYLM


def test_the_real_llm_tool_parses_to_exactly_the_llm_preset() -> None:
    from course.llm import rl

    assert settings_from_args(LLM, rl.build_parser().parse_args(["--template", "plain"])) == LLM


def test_the_llm_preset_differs_from_the_tiny_lm_only_in_its_pace_and_slice() -> None:
    changed = {k for k, v in asdict(LLM).items() if asdict(TINYLM)[k] != v}
    assert changed == {"steps", "lr", "max_tokens", "eval_every", "slice_items"}


def test_every_setting_is_a_flag_of_both_rl_tools() -> None:
    from course.llm import rl as llm_rl
    from course.tinylm import rl as tiny_rl

    names = {f.name for f in dataclasses.fields(RLConfig)}
    for parser in (tiny_rl.build_parser(), llm_rl.build_parser()):
        assert names <= {a.dest for a in parser._actions}


def test_the_kl_estimator_left_unset_is_the_standard_pairing_for_its_place() -> None:
    assert (RLConfig().kl_estimator, RLConfig(kl_in="reward").kl_estimator) == ("k3", "k1")
    assert RLConfig(kl_in="reward", kl_estimator="k3").kl_estimator == "k3"


@pytest.mark.parametrize("changes, flag", [
    ({"group_size": 1}, "--group-size must be at least 2"),
    ({"prompts_per_step": 512, "group_size": 512}, "--prompts-per-step x --group-size"),
    ({"steps": 100_000, "save_every": 1}, "--steps / --save-every"),
    ({"beta": -0.5}, "--beta must be between 0.0 and 100.0"),
    ({"eval_every": 0}, "--eval-every must be at least 1"),
    ({"loss_norm": "per-token"}, "--loss-norm must be one of constant, seq-mean, token-mean"),
    ({"rubric": "no_such_rubric"}, "no_such_rubric"),
])
def test_settings_the_loop_cannot_run_with_are_refused_when_built(changes: dict[str, Any], flag: str) -> None:
    with pytest.raises(CourseError, match=flag.replace("+", r"\+")):
        replace(TINYLM, **changes)


def test_max_tokens_is_bounded_by_the_policy_the_tool_trains() -> None:
    LLM.check_max_tokens(256)
    with pytest.raises(CourseError, match="--max-tokens must be between 1 and 48, got 64"):
        replace(TINYLM, max_tokens=64).check_max_tokens(48)


# ---------------------------------------------------------------------------
# The generator, on a settings class of its own
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Toy:
    count: int = setting(3, "how many (default {default})", bounds=(1, 10))
    size: int = setting(5, "how big (default {default})", bounds=(1, None))
    rate: float = setting(0.5, "how fast (default {default:.2f})", bounds=(0.0, 1.0))
    seed: int = setting(0, "seed (default {default})", seed=True)
    mode: str = setting("a", "which (default {default})", choices=("a", "b"))


def _parser(preset: Toy, after: dict[str, Callable[[Any], Any]] | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="toy", allow_abbrev=False)
    add_settings_flags(p, preset, after=after)
    return p


def test_generated_flags_show_the_presets_defaults_in_their_help() -> None:
    text = _parser(replace(Toy(), count=7, rate=0.25)).format_help()
    assert "how many (default 7)" in text and "how fast (default 0.25)" in text and "{a,b}" in text


def test_generated_flags_parse_to_the_preset_and_refuse_values_out_of_bounds(
        capsys: pytest.CaptureFixture[str]) -> None:
    p = _parser(Toy())
    assert settings_from_args(Toy(), p.parse_args([])) == Toy()
    assert settings_from_args(Toy(), p.parse_args(["--count", "10", "--rate", "1"])) == Toy(count=10, rate=1.0)
    for bad in (["--count", "11"], ["--size", "0"], ["--rate", "nan"], ["--seed", "-1"], ["--mode", "c"]):
        with pytest.raises(SystemExit):
            p.parse_args(bad)
        assert bad[0] in capsys.readouterr().err


def test_a_tools_own_options_go_right_after_the_field_it_names() -> None:
    p = _parser(Toy(), after={"count": lambda p: p.add_argument("--mine")})
    flags = [a.option_strings[0] for a in p._actions if a.option_strings and a.dest != "help"]
    assert flags == ["--count", "--mine", "--size", "--rate", "--seed", "--mode"]
