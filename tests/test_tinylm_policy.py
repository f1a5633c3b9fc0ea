"""The tiny LM as a policy: sampling shapes and records, log-probabilities, the RL loss, checkpoints, CLIs.

Uses a tiny random network (1 layer, 32 dimensions) so each test takes milliseconds;
only the checkpoint test loads the shipped pi0.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from course.lib.bundled import PI0_MANIFEST, PI0_PATH
from course.lib.records.formats import iter_completions, iter_samples
from course.lib.records.jsonl import dumps_line

# A skip mark and a fixture, not imports at the top: torch costs ~2 s to import, and every
# pytest-xdist worker collects every file; only the worker that runs these tests should pay for it.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                reason="the lm extra (PyTorch) is not installed")


@pytest.fixture(scope="module", autouse=True)
def _torch_and_the_tiny_lm() -> None:
    """Bind torch, the tiny-LM modules and the TINY config as this file's globals (first test only)."""
    global torch, rl, sample, GPT, GPTConfig, load_checkpoint, positions, save_checkpoint
    global completion_logprobs, generate, policy_logits, set_threads, TINY
    import torch

    from course.lib.policy.sampling import set_threads
    from course.tinylm import rl, sample
    from course.tinylm.model import GPT, GPTConfig, load_checkpoint, positions, save_checkpoint
    from course.tinylm.policy import completion_logprobs, generate, policy_logits

    TINY = GPTConfig(n_layer=1, n_head=2, n_embd=32, block_size=96)


ITEMS = [
    {"id": "t-1", "prompt": "Compute 2 + 3. Output exactly one line: Final: <int>", "expected_answer": 5},
    {"id": "t-2", "prompt": "Compute 7 * 9. Output exactly one line: Final: <int>", "expected_answer": 63},
    {"id": "t-3", "prompt": "Compute 12 - 30. Output exactly one line: Final: <int>", "expected_answer": -18},
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, _torch_and_the_tiny_lm):
    set_threads(1)
    torch.manual_seed(0)
    model = GPT(TINY).eval()
    root = tmp_path_factory.mktemp("tinylm")
    ck = root / "tiny.pt"
    save_checkpoint(model, ck)
    data = root / "toy_dev.jsonl"
    data.write_text("".join(dumps_line(it) + "\n" for it in ITEMS), encoding="utf-8")
    return {"model": model, "ck": ck, "data": data, "root": root}


def run_sample(tiny, out: Path, *extra: str) -> int:
    return sample.main(["--dataset", str(tiny["data"]), "--checkpoint", str(tiny["ck"]), "--out", str(out),
                        "--max-tokens", "6", "--threads", "1", *extra])


# --- sampling ------------------------------------------------------------------------------
def test_sample_with_n_1_writes_frozen_rollouts_recording_policy_sampling_and_truncation(tiny):
    out = tiny["root"] / "n1.jsonl"
    assert run_sample(tiny, out, "--n", "1", "--seed", "7", "--temperature", "0.9") == 0
    lines = list(iter_completions(out))  # the course's validated reader accepts it
    assert [c.id for c in lines] == ["t-1", "t-2", "t-3"]
    digest = load_checkpoint(tiny["ck"])[1]["sha256"]
    assert {c.policy for c in lines} == {f"tinylm:{digest[:12]}"}
    assert lines[0].sampling == {"temperature": 0.9, "top_p": 1.0, "max_tokens": 6, "seed": 7}
    raw = [json.loads(x) for x in out.read_text().splitlines()]
    assert all(isinstance(r["truncated"], bool) for r in raw)
    assert all(len(r["completion"]) <= 6 for r in raw)


def test_sample_with_n_4_writes_a_selection_pack_with_indices_0_to_3(tiny):
    out = tiny["root"] / "n4.jsonl"
    assert run_sample(tiny, out, "--n", "4", "--seed", "7") == 0
    packs = list(iter_samples(out))
    assert [len(p.samples) for p in packs] == [4, 4, 4]
    assert [s.sample_index for s in packs[0].samples] == [0, 1, 2, 3]


def test_a_pack_and_a_single_rollout_record_the_same_sampling_so_the_gate_may_compare_them(tiny):
    # n is selection compute (locked by the gate as selection.n), not a sampling setting.
    one, pack = tiny["root"] / "b1.jsonl", tiny["root"] / "b4.jsonl"
    run_sample(tiny, one, "--n", "1", "--seed", "5")
    run_sample(tiny, pack, "--n", "4", "--seed", "5")
    assert next(iter_completions(one)).sampling == next(iter_samples(pack)).sampling
    assert "n" not in next(iter_samples(pack)).sampling


def test_sample_0_of_a_pack_is_the_same_draw_as_the_n_1_rollout(tiny):
    one, pack = tiny["root"] / "a1.jsonl", tiny["root"] / "a4.jsonl"
    run_sample(tiny, one, "--n", "1", "--seed", "3")
    run_sample(tiny, pack, "--n", "4", "--seed", "3")
    assert [c.completion for c in iter_completions(one)] == [p.samples[0].completion for p in iter_samples(pack)]


def test_same_seed_gives_byte_identical_rollouts_and_another_seed_does_not(tiny):
    a, b, c = (tiny["root"] / f"s{i}.jsonl" for i in range(3))
    run_sample(tiny, a, "--n", "2", "--seed", "11")
    run_sample(tiny, b, "--n", "2", "--seed", "11")
    run_sample(tiny, c, "--n", "2", "--seed", "12")
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


def test_pi0_sampled_with_seed_0_reproduces_the_shipped_frozen_rollouts_byte_for_byte(tmp_path):
    # The guard on every speed-up of the sampler: it may change how the numbers are computed, never one of them.
    from course.lib.bundled import DEFAULT_DATASETS, FROZEN_PI0_DEV

    out, threads = tmp_path / "pi0_dev.jsonl", torch.get_num_threads()
    try:  # the shipped file was sampled with the CLI's defaults (2 threads)
        assert sample.main(["--dataset", str(DEFAULT_DATASETS[0]), "--n", "1", "--seed", "0", "--out", str(out)]) == 0
    finally:
        set_threads(threads)
    assert out.read_bytes() == FROZEN_PI0_DEV.read_bytes()


def test_attention_gives_the_same_bits_for_a_bool_mask_and_its_additive_float_form():
    # The sampler hands attention a float mask it updates in place; GPT.forward converts bool masks once.
    # Both rest on scaled_dot_product_attention treating True/False exactly as 0.0/-inf.
    from course.tinylm.model import additive_mask

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, 2, 5, 8, generator=g, requires_grad=True) for _ in range(3))
    mask = torch.rand(3, 1, 5, 5, generator=g) > 0.3
    mask |= torch.eye(5, dtype=torch.bool)  # no empty rows
    grads = []
    for m in (mask, additive_mask(mask)):
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m)
        grads.append((y, *torch.autograd.grad(y.square().sum(), (q, k, v))))
    assert all(torch.equal(a, b) for a, b in zip(*grads))


def test_the_rotary_table_read_by_position_equals_the_angles_computed_for_those_positions():
    # The table replaced a per-call computation; the same float32 operations give the same bits.
    from course.tinylm.model import rope_table

    cos, sin = rope_table(96, 16)
    pos = torch.tensor([[0, 1, 2, 95], [7, 7, 50, 3]])
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, 16, 2, dtype=torch.float32) / 16))
    angles = pos.float()[:, None, :, None] * inv_freq  # (B, 1, T, D/2), as forward computed it before
    assert torch.equal(cos[pos][:, None], angles.cos()) and torch.equal(sin[pos][:, None], angles.sin())


def test_sample_refuses_to_overwrite_an_existing_file_without_force(tiny, capsys):
    out = tiny["root"] / "exists.jsonl"
    out.write_text("keep\n")
    assert run_sample(tiny, out) == 2
    assert out.read_text() == "keep\n"
    assert "--force" in capsys.readouterr().err


def test_greedy_sampling_stops_at_max_tokens_and_reports_truncation(tiny):
    ro = generate(tiny["model"], [ITEMS[0]["prompt"]], ["s"], temperature=0.0, max_tokens=3)
    assert ro.tokens.shape[1] <= 3
    assert ro.truncated[0] == (len(ro.texts[0]) == 3 and int(ro.tokens[0, -1]) != 3)


# --- log-probabilities ---------------------------------------------------------------------
def test_shared_prompt_logprobs_equal_a_plain_full_sequence_forward(tiny):
    model = tiny["model"]
    ro = generate(model, [it["prompt"] for it in ITEMS], [f"r{i}" for i in range(6)], group=2, max_tokens=6)
    with torch.no_grad():
        logp, _ = completion_logprobs(model, ro)
    for b in range(6):
        prompt = ro.prompt_tokens[b // 2][ro.prompt_valid[b // 2]].tolist()
        chosen = ro.tokens[b][ro.mask[b]].tolist()
        seq = torch.tensor([prompt + chosen])
        with torch.no_grad():
            logits, _ = model(seq, positions(torch.ones_like(seq, dtype=torch.bool)), None)
        full = torch.log_softmax(policy_logits(logits[0, :-1]), -1).gather(-1, seq[0, 1:, None]).squeeze(-1)
        assert torch.allclose(full[len(prompt) - 1:], logp[b][ro.mask[b]], atol=1e-5)


# --- the RL loss ---------------------------------------------------------------------------
def _one_step_change(tiny, advantage: float) -> float:
    """Mean change of log pi(sampled tokens) after one SGD step on the RL loss with the given advantage."""
    torch.manual_seed(1)
    model = GPT(TINY)
    model.load_state_dict(tiny["model"].state_dict())
    ro = generate(model, [ITEMS[0]["prompt"]], ["g0", "g1"], group=2, max_tokens=5)
    before, _ = completion_logprobs(model, ro)
    adv = torch.tensor([advantage, advantage])
    loss, _ = rl.policy_loss(before, before.detach(), ro.mask, adv, beta=0.0)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)  # a small step: the claim is about the gradient direction
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        after, _ = completion_logprobs(model, ro)
    m = ro.mask
    return float((after[m] - before.detach()[m]).mean())


def test_a_positive_advantage_raises_the_log_probability_of_the_sampled_tokens(tiny):
    assert _one_step_change(tiny, +1.0) > 0


def test_a_negative_advantage_lowers_the_log_probability_of_the_sampled_tokens(tiny):
    assert _one_step_change(tiny, -1.0) < 0


def test_both_kl_estimates_and_the_kl_loss_are_zero_when_the_policy_equals_pi0(tiny):
    ro = generate(tiny["model"], [it["prompt"] for it in ITEMS], [f"k{i}" for i in range(9)], group=3, max_tokens=6)
    logp, _ = completion_logprobs(tiny["model"], ro)
    loss, parts = rl.policy_loss(logp, logp.detach().clone(), ro.mask, torch.zeros(9), beta=0.5)
    assert float(parts["k1"].detach().abs().sum()) == 0.0
    assert float(parts["k3"].detach().abs().sum()) == 0.0
    assert float(parts["kl_loss"].detach()) == 0.0 and float(loss.detach()) == 0.0


def test_k3_is_never_negative_while_k1_can_be_for_a_drifted_policy(tiny):
    logp = torch.tensor([[-0.1, -2.0, -1.0]])
    ref = torch.tensor([[-0.5, -1.0, -1.0]])
    mask = torch.tensor([[True, True, False]])
    _, parts = rl.policy_loss(logp, ref, mask, torch.zeros(1), beta=1.0)
    assert float(parts["k1"][0, 1]) < 0 < float(parts["k1"][0, 0])
    assert bool((parts["k3"] >= 0).all()) and float(parts["k3"][0, 2]) == 0.0  # off the mask: exactly 0


def test_goodhart_alarm_fires_only_when_reward_rises_while_strict_pass_falls():
    rising = [{"step": s, "train_reward_interval": r, "slice_strict_pass": p}
              for s, r, p in ((5, 0.4, 0.3), (10, 0.5, 0.3), (15, 0.6, 0.2))]
    assert "strict pass rate" in rl.goodhart_alarm(rising)
    both_up = [dict(e, slice_strict_pass=0.3 + 0.05 * i) for i, e in enumerate(rising)]
    assert rl.goodhart_alarm(both_up) == ""


# --- a real (tiny) RL run --------------------------------------------------------------------
def test_a_short_rl_run_raises_the_reward_of_a_format_only_task():
    """Reward 1 when a completion starts with a digit: rare for a random network (~10 %),
    so the rise after 30 REINFORCE steps on one prompt comes from learning, not luck."""
    torch.manual_seed(0)
    model = GPT(TINY)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    prompt = ITEMS[0]["prompt"]

    def reward_batch(step: int):
        ro = generate(model.eval(), [prompt], [f"smoke:{step}:{j}" for j in range(16)], group=16, max_tokens=3)
        return ro, torch.tensor([1.0 if t[:1].isdigit() else 0.0 for t in ro.texts])

    start = sum(float(reward_batch(1000 + k)[1].mean()) for k in range(4)) / 4
    for step in range(30):
        ro, r = reward_batch(step)
        model.train()
        logp, _ = completion_logprobs(model, ro)
        loss, _ = rl.policy_loss(logp, logp.detach(), ro.mask, r - r.mean(), beta=0.0)
        opt.zero_grad()
        loss.backward()
        opt.step()
    end = sum(float(reward_batch(1000 + k)[1].mean()) for k in range(4)) / 4
    assert start < 0.25
    assert end > start + 0.3


# --- checkpoints ------------------------------------------------------------------------------
def test_a_checkpoint_round_trips_and_its_policy_name_is_the_sha256_prefix(tiny):
    model, info = load_checkpoint(tiny["ck"])
    assert info["policy"] == "tinylm:" + info["sha256"][:12]
    for (k, a), (_, b) in zip(model.state_dict().items(), tiny["model"].state_dict().items()):
        assert torch.equal(a, b), k


def test_the_shipped_pi0_loads_with_weights_only_and_matches_its_manifest():
    manifest = json.loads(PI0_MANIFEST.read_text(encoding="utf-8"))
    state = torch.load(PI0_PATH, weights_only=True)
    assert isinstance(state, dict)
    _, info = load_checkpoint(PI0_PATH)
    assert info["sha256"] == manifest["sha256"]
    assert info["policy"] == manifest["policy"]
    assert info["config"] == manifest["config"]
    assert PI0_PATH.stat().st_size <= 5 * 1024 * 1024


def test_a_truncated_checkpoint_is_a_one_line_error_not_a_traceback(tiny, capsys):
    bad = tiny["root"] / "bad.pt"
    bad.write_bytes(tiny["ck"].read_bytes()[:100])
    out = tiny["root"] / "never.jsonl"
    assert sample.main(["--dataset", str(tiny["data"]), "--checkpoint", str(bad), "--out", str(out)]) == 2
    assert "not a tiny LM checkpoint" in capsys.readouterr().err
    assert not out.exists()


# --- command lines ------------------------------------------------------------------------------
@pytest.mark.parametrize("module", ["sample", "rl", "sweep", "shift", "sft", "sft_data"])
def test_every_tinylm_cli_prints_help_with_a_worked_example(module, run_in_process, tmp_path):
    proc = run_in_process(f"course.tinylm.{module}", ["--help"], cwd=tmp_path)
    assert proc.returncode == 0
    assert "example:" in proc.stdout and f"course.tinylm.{module}" in proc.stdout


def test_a_tinylm_cli_without_torch_prints_the_install_line_and_exits_2(tiny):
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from course.tinylm import sample\n"
        f"raise SystemExit(sample.main(['--dataset', {str(tiny['data'])!r}, "
        f"'--out', {str(tiny['root'] / 'x.jsonl')!r}]))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("error: the tiny LM needs the lm extra (torch not installed): "
                                   "pip install torch==2.13.0 && pip install -e '.[lm]'")


def test_rl_cli_smoke_run_writes_log_curves_checkpoint_and_a_reproducible_log(tiny, tmp_path, request):
    argv = ["--pi0", str(tiny["ck"]), "--rubric", "contains_answer", "--steps", "2", "--prompts-per-step", "2",
            "--group-size", "2", "--eval-every", "1", "--eval-samples", "1", "--slice-items", "4",
            "--max-tokens", "4", "--threads", "1", "--no-holdout"]
    assert rl.main([*argv, "--outdir", str(tmp_path / "a")]) == 0
    request.getfixturevalue("figures_not_rendered")  # the rerun is for the log's bytes: one rendered PNG is enough
    assert rl.main([*argv, "--outdir", str(tmp_path / "b")]) == 0
    a = tmp_path / "a"
    log = [json.loads(x) for x in (a / "rl_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [0, 1, 2]
    for key in ("reward", "strict_pass_train", "kl_k1_per_token", "kl_k3_per_token", "entropy_per_token",
                "no_signal_groups", "pg_samples", "mean_tokens_wrong", "truncated_share", "strict_codes"):
        assert key in log[1], key
    assert "slice_strict_pass" in log[2]["eval"]
    assert (a / "curves.csv").read_text().startswith("step,reward,")
    assert (a / "final.pt").exists() and (a / "shift.md").exists()
    assert (a / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # a real picture, rendered
    assert (a / "rl_log.jsonl").read_bytes() == (tmp_path / "b" / "rl_log.jsonl").read_bytes()


def test_rl_rejects_an_unknown_rubric_before_doing_any_work(tmp_path, capsys):
    assert rl.main(["--rubric", "no_such_rubric", "--outdir", str(tmp_path / "r")]) == 2
    assert "no_such_rubric" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_beta_sweep_tabulates_reward_against_kl_for_each_beta(tiny, tmp_path, capsys, figures_not_rendered):
    from course.tinylm import sweep

    out = tmp_path / "sweep"
    argv = ["--betas", "0", "0.5", "--steps", "1", "--outdir", str(out), "--threads", "1", "--pi0", str(tiny["ck"]),
            "--prompts-per-step", "2", "--group-size", "2", "--eval-samples", "1", "--slice-items", "2",
            "--max-tokens", "3"]
    assert sweep.main(argv) == 0
    rows = (out / "sweep.csv").read_text().splitlines()
    assert rows[0].startswith("beta,reward_last5,")
    assert [r.split(",")[0] for r in rows[1:]] == ["0.0", "0.5"]
    assert (out / "beta_0" / "rl_log.jsonl").exists() and (out / "beta_0.5" / "rl_log.jsonl").exists()
    assert "| beta |" in capsys.readouterr().out
