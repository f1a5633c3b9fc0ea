"""Fault suite, issue #30 item 9 and issue #41 item 4: an API key reaches no artifact.

The class: a credential a source recorded (an inspect log's request headers and body extras,
lm-eval's ``model_args`` in any of their forms) or a model echoed back in another spelling must
reach no frozen-rollouts line, nothing printed, no manifest.json or summary.md. The rule lives in
``course.lib.external.redaction`` (``public_settings``, ``public_args_text``, ``redact``); the
importer applies it (``rollout_readers.without_credentials``) and the one manifest builder refuses
what slipped past it (``course.lib.records.manifest.refuse_credentials``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course.eval import main as eval_main
from course.import_completions import main as import_main
from course.lib.external.redaction import redact

REPO = Path(__file__).resolve().parents[2]
BRIDGES = REPO / "tests" / "data" / "bridges"
DEV = str(REPO / "data" / "datasets" / "math_dev.jsonl")
FROZEN = str(REPO / "data" / "rollouts" / "frozen_rollouts_dev.jsonl")
API_KEY = "sk-proj-Q7w8E9r0T1y2U3i4O5p6"
DIGITS = "12345678901234"
needs_inspect = pytest.mark.skipif(importlib.util.find_spec("inspect_ai") is None, reason="needs the inspect extra")


def _everything_written(*roots: Path) -> str:
    return "".join(p.read_text(encoding="utf-8", errors="replace") for root in roots
                   for p in ([root] if root.is_file() else sorted(root.rglob("*"))) if p.is_file())


# ---------------------------------------------------------------------------
# inspect logs: request headers and body extras are never recorded
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def inspect_log_with_a_key(tmp_path_factory):
    """A real inspect log whose generate config sent the key in a header and in the request body."""
    from inspect_ai.log import read_eval_log, write_eval_log
    from inspect_ai.model import GenerateConfig

    from course.integrations.inspect_ai import main

    os.environ.setdefault("INSPECT_DISPLAY", "none")
    log_dir = tmp_path_factory.mktemp("inspect_logs")
    assert main(["--completions", FROZEN, "--log-dir", str(log_dir), "--limit", "5"]) == 0
    (path,) = list(log_dir.iterdir())
    log = read_eval_log(str(path))
    log.eval.model_generate_config = GenerateConfig(
        temperature=0.0, max_tokens=64,
        extra_headers={"Authorization": f"Bearer {API_KEY}", "X-Trace": "run-7"},
        extra_body={"api_key": API_KEY, "top_k": 20, "user": "alice"},
    )
    keyed = tmp_path_factory.mktemp("keyed") / "keyed.json"
    write_eval_log(log, str(keyed))
    path.unlink()
    return keyed


@needs_inspect
def test_an_inspect_logs_headers_and_body_strings_reach_no_line_no_output_no_manifest_or_summary(
        inspect_log_with_a_key, tmp_path, capsys):
    out, run = tmp_path / "r.jsonl", tmp_path / "run"
    assert import_main(["--format", "inspect", str(inspect_log_with_a_key), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "not recorded (may carry a credential): extra_headers, extra_body.api_key, extra_body.user" in printed
    sampling = json.loads(out.read_text(encoding="utf-8").splitlines()[0])["sampling"]
    assert sampling == {"temperature": 0.0, "max_tokens": 64, "extra_body": {"top_k": 20}}  # sampling settings stay
    assert eval_main(["--dataset", DEV, "--completions", str(out), "--outdir", str(run), "--allow-missing"]) == 0
    everything = printed + capsys.readouterr().out + _everything_written(out, run)
    assert API_KEY not in everything and "Bearer" not in everything


@needs_inspect
def test_a_failed_inspect_logs_error_message_is_shown_without_the_key_it_quotes(
    inspect_log_with_a_key, tmp_path, capsys
):
    from inspect_ai.log import EvalError, read_eval_log, write_eval_log

    log = read_eval_log(str(inspect_log_with_a_key))
    log.status = "error"
    log.error = EvalError(message=f"AuthenticationError: Incorrect API key provided: {API_KEY}", traceback="",
                          traceback_ansi="")
    failed = tmp_path / "failed.json"
    write_eval_log(log, str(failed))
    assert import_main(["--format", "inspect", str(failed), "--out", str(tmp_path / "r.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "Incorrect API key provided: [redacted]" in err and API_KEY[8:] not in err


# ---------------------------------------------------------------------------
# lm-eval model_args: every form, nested arguments, numbers
# ---------------------------------------------------------------------------
MODEL_ARGS = {
    "headers_as_text": f'pretrained=org/m,headers={{"X-Api-Key": "{API_KEY}", "Accept": "json"}},dtype=float16',
    "headers_as_json_text": json.dumps({"pretrained": "org/m", "headers": json.dumps({"X-Api-Key": API_KEY}),
                                        "dtype": "float16"}),
    "nested_client_options": f'pretrained=org/m,client_args={{"api_key": "{API_KEY}", "timeout": 30}},dtype=float16',
    "authtoken": f"pretrained=org/m,authtoken={API_KEY[3:]},dtype=float16",
    "api_key_2": f"pretrained=org/m,api_key_2={API_KEY[3:]},dtype=float16",
    "pwd": f"pretrained=org/m,pwd={API_KEY[3:]},dtype=float16",
    "cookie": f"pretrained=org/m,cookie=session={API_KEY[3:]},dtype=float16",
    "all_digit_token": f"pretrained=org/m,token={DIGITS},dtype=float16",
    "basic_auth_header": f"pretrained=org/m,header=Authorization: Basic {API_KEY[3:]},dtype=float16",
    "dict_with_a_number": {"pretrained": "org/m", "token": int(DIGITS), "dtype": "float16"},
    "a_random_key_under_an_innocent_name": f"pretrained=org/m,extra=Xq7{API_KEY[8:]}Zr8Wk2,dtype=float16",
}


@pytest.mark.parametrize("form", sorted(MODEL_ARGS))
def test_a_credential_in_lm_eval_model_args_reaches_neither_the_policy_name_nor_the_terminal(tmp_path, capsys, form):
    results = json.loads((BRIDGES / "lmeval_results_course_math.json").read_text(encoding="utf-8"))
    results["config"]["model_args"] = MODEL_ARGS[form]
    (tmp_path / "results.json").write_text(json.dumps(results), encoding="utf-8")
    out = tmp_path / "r.jsonl"
    assert import_main(["--format", "lm-eval", str(BRIDGES / "lmeval_samples_course_math.jsonl"),
                        "--results", str(tmp_path / "results.json"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    written = out.read_text(encoding="utf-8") + printed
    assert API_KEY[8:] not in written and DIGITS not in written
    policy = json.loads(written.splitlines()[0])["policy"]
    assert "pretrained=org/m" in policy and "dtype=float16" in policy, policy  # what is no secret stays
    assert "not recorded (may carry a credential): model_args." in printed


# ---------------------------------------------------------------------------
# The manifest: what reaches it through a completions file is refused, not copied
# ---------------------------------------------------------------------------
HAND_WRITTEN = {
    "a_header_in_the_sampling": ({"temperature": 0.0, "extra_headers": {"Authorization": f"Bearer {API_KEY}"}}, "m"),
    "a_body_key_in_the_sampling": ({"temperature": 0.0, "extra_body": {"api_key": API_KEY}}, "m"),
    "a_token_in_the_policy_name": ({"temperature": 0.0}, f"lm-eval:hf:pretrained=org/m,token={DIGITS}"),
}


@pytest.mark.parametrize("case", sorted(HAND_WRITTEN))
def test_course_eval_refuses_a_completions_file_whose_policy_or_sampling_carries_a_credential(tmp_path, capsys, case):
    sampling, policy = HAND_WRITTEN[case]
    err = refused_by_eval(tmp_path, capsys, policy, sampling)
    assert "Traceback" not in err
    assert API_KEY not in err and DIGITS not in err


def refused_by_eval(tmp_path, capsys, policy: str, sampling: dict) -> str:
    """course.eval on one completions line with this policy and sampling: exit 2, one line naming a
    credential, no run written. Returns what it printed on stderr."""
    completions = tmp_path / "c.jsonl"
    completions.write_text(json.dumps({"id": "dev-0001", "completion": "Final: 1", "policy": policy,
                                       "sampling": sampling}) + "\n", encoding="utf-8")
    run = tmp_path / "run"
    assert eval_main(["--dataset", DEV, "--completions", str(completions), "--outdir", str(run),
                      "--allow-missing"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "may hold a credential" in err
    assert not run.exists()
    return err


# ---------------------------------------------------------------------------
# One rule for a credential in a URL or a pair list, wherever a name or setting is recorded
# ---------------------------------------------------------------------------
PLAIN_SECRET = "q7w8e9r0t1y2u3i4"  # lower case letters and digits: no key shape, found only by where it is
IN_A_URL_OR_PAIR = {
    "an_azure_sas_signature": f"https://acct.blob.core.windows.net/c?sv=2024-05-04&sr=c&sig={PLAIN_SECRET}",
    "an_azure_functions_code": f"https://app.azurewebsites.net/api/chat?code={PLAIN_SECRET}",
    "a_url_fragment": f"https://h.example/v1#token={PLAIN_SECRET}",
    "a_scheme_less_query_with_an_encoded_name": f"h.example/v1?api-version=1&%73ig={PLAIN_SECRET}",
    "a_header_as_a_pair_list": json.dumps([["X-Secret", PLAIN_SECRET]]),
    "a_header_as_a_name_value_object": json.dumps([{"name": "X-Secret", "value": PLAIN_SECRET}]),
}


@pytest.mark.parametrize("form", sorted(IN_A_URL_OR_PAIR))
def test_a_credential_in_a_url_or_a_pair_list_in_lm_eval_model_args_is_not_recorded(tmp_path, capsys, form):
    results = json.loads((BRIDGES / "lmeval_results_course_math.json").read_text(encoding="utf-8"))
    results["config"]["model_args"] = f"pretrained=org/m,extra={IN_A_URL_OR_PAIR[form]},dtype=float16"
    (tmp_path / "results.json").write_text(json.dumps(results), encoding="utf-8")
    out = tmp_path / "r.jsonl"
    assert import_main(["--format", "lm-eval", str(BRIDGES / "lmeval_samples_course_math.jsonl"),
                        "--results", str(tmp_path / "results.json"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert PLAIN_SECRET not in out.read_text(encoding="utf-8") + printed
    assert "not recorded (may carry a credential): model_args.extra" in printed
    policy = json.loads(out.read_text(encoding="utf-8").splitlines()[0])["policy"]
    assert "pretrained=org/m" in policy and "dtype=float16" in policy, policy


@pytest.mark.parametrize("form", sorted(IN_A_URL_OR_PAIR))
@pytest.mark.parametrize("field", ["policy", "sampling"])
def test_course_eval_refuses_a_credential_in_a_url_or_a_pair_list_in_the_policy_or_sampling(
        tmp_path, capsys, form, field):
    value = IN_A_URL_OR_PAIR[form]
    policy = f"m,extra={value}" if field == "policy" else "m"
    sampling = {"temperature": 0.0, "extra": json.loads(value) if value.startswith("[") else value} \
        if field == "sampling" else {"temperature": 0.0}
    assert PLAIN_SECRET not in refused_by_eval(tmp_path, capsys, policy, sampling)


def test_a_query_key_is_judged_by_the_same_rule_in_a_url_a_body_container_a_pair_and_an_argument():
    from course.lib.external.redaction import public_args_text, public_settings

    for name in ("sig", "signature", "code", "token", "key"):
        settings_ = {"extra_query": {name: PLAIN_SECRET}, "url": f"https://h/v1?{name}={PLAIN_SECRET}",
                     "pairs": [[name, PLAIN_SECRET]], name: PLAIN_SECRET}
        clean, withheld = public_settings(settings_)
        assert PLAIN_SECRET not in json.dumps(clean), (name, clean)
        assert len(withheld) == 4, (name, withheld)
        assert PLAIN_SECRET not in public_args_text(f"m,{name}={PLAIN_SECRET}")[0]


def test_an_ordinary_policy_name_with_a_hash_a_question_mark_or_a_code_flag_is_kept_as_it_is():
    from course.lib.external.redaction import public_args_text

    for name in ("run#3", "what?", "pretrained=org/m,trust_remote_code=True,sig_figs=3",
                 "qwen2.5:0.5b@127.0.0.1:11434", "https://h/v1?api-version=2024-06-01"):
        assert public_args_text(name) == (name, []), name


# ---------------------------------------------------------------------------
# Redaction: no spelling of the key survives
# ---------------------------------------------------------------------------
_LOOKALIKE = str.maketrans("\u0430\u0435\u043e\u0440\u0441\u0445\u0443", "aeopcxy")


def _as_read(text: str) -> str:
    """The letters and digits a reader sees, in order (written without the redaction module: the check
    must not share its mistakes): compatibility forms, accents, case and lookalike letters folded."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    kept = "".join(c for c in decomposed if unicodedata.category(c)[0] not in "MZC")
    return "".join(c for c in unicodedata.normalize("NFKC", kept).lower().translate(_LOOKALIKE) if c.isalnum())


SPELLINGS = {
    "as_is": lambda c: c,
    "upper": str.upper,
    "fullwidth": lambda c: chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c,
    "acute_accent": lambda c: c + "\u0301",
    "dot_below_and_tilde": lambda c: c + "\u0323\u0303",
    "zero_width_space_after": lambda c: c + "\u200b",
    "dotted": lambda c: c + ".",
    "cyrillic_lookalike": lambda c: {"a": "\u0430", "e": "\u0435", "o": "\u043e", "p": "\u0440", "c": "\u0441",
                                     "x": "\u0445", "y": "\u0443"}.get(c, c),
    "bold_math_capital": lambda c: chr(0x1D400 + ord(c.upper()) - 65) if c.isalpha() else c,
    "circled": lambda c: chr(0x24D0 + ord(c.lower()) - 97) if c.isalpha() else c,
}
KEY_CHARS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_",
                    min_size=16, max_size=48)


@settings(max_examples=200, deadline=None)
@given(key=KEY_CHARS, spellings=st.lists(st.sampled_from(sorted(SPELLINGS)), min_size=1, max_size=48),
       before=st.text(max_size=20), after=st.text(max_size=20))
def test_no_spelling_of_the_key_survives_redaction(key, spellings, before, after):
    echoed = "".join(SPELLINGS[spellings[i % len(spellings)]](c) for i, c in enumerate(key))
    shown = _as_read(redact(before + echoed + after, key))
    width = max(8, -(-len(key) // 2))  # redact's rule: any piece of half the key (8 characters at least)
    letters = _as_read(key)
    for i in range(len(letters) - width + 1):
        assert letters[i:i + width] not in shown, (key, echoed, shown)


def test_compare_policies_refuses_a_file_whose_policy_carries_a_credential_before_scoring(tmp_path, capsys):
    from course.compare_policies import main as compare_main

    completions = tmp_path / "c.jsonl"
    completions.write_text(json.dumps({"id": "dev-0001", "completion": "Final: 1", "sampling": {"temperature": 0.0},
                                       "policy": IN_A_URL_OR_PAIR["an_azure_sas_signature"]}) + "\n", encoding="utf-8")
    assert compare_main([str(completions), "--dataset", DEV]) == 2
    captured = capsys.readouterr()
    assert "may hold a credential" in captured.err and PLAIN_SECRET not in captured.err + captured.out
