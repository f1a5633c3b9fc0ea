"""course.eval on a selection pack (several samples per item) and course.gate on two such runs (issue 33 item 7)."""

from __future__ import annotations

import json
from pathlib import Path

from course.lib.records.jsonl import dumps_line
from course.lib.records.manifest import sha256_file

SAMPLING = {"max_tokens": 32, "seed": 5, "temperature": 0.8, "top_p": 1.0}
N, M = 40, 4


def write_dataset(path: Path) -> Path:
    path.write_text("".join(dumps_line({"id": f"d-{i:03d}", "prompt": f"Item {i}", "expected_answer": i}) + "\n"
                            for i in range(N)))
    return path


def write_pack(path: Path, passes_of, m: int = M) -> Path:  # type: ignore[no-untyped-def]
    """Item i gets passes_of(i) right answers among its m samples."""
    lines = []
    for i in range(N):
        k = passes_of(i)
        samples = [{"sample_index": j, "completion": f"Final: {i if j < k else i + 1}"} for j in range(m)]
        lines.append(dumps_line({"id": f"d-{i:03d}", "samples": samples, "policy": "p", "sampling": SAMPLING}))
    path.write_text("\n".join(lines) + "\n")
    return path


def evaluate(run_in_process, tmp_path: Path, name: str, pack: Path, *extra: str) -> Path:  # type: ignore[no-untyped-def]
    out = tmp_path / name
    proc = run_in_process("course.eval", ["--dataset", str(tmp_path / "math_dev.jsonl"), "--completions", str(pack),
                                          "--outdir", str(out), *extra], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return out


def test_a_pack_is_scored_one_line_per_sample_with_its_items_pass_count(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    write_dataset(tmp_path / "math_dev.jsonl")
    run = evaluate(run_in_process, tmp_path, "x4",
                   write_pack(tmp_path / "pack.jsonl", lambda i: i % 5 if i % 5 < 5 else 0))
    lines = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert len(lines) == N * M
    assert ([line["sample_index"] for line in lines[:M]] == list(range(M))
            and {line["id"] for line in lines[:M]} == {"d-000"})
    third = [line for line in lines if line["id"] == "d-003"]
    assert ([line["reward"] for line in third] == [1.0, 1.0, 1.0, 0.0]
            and {(line["item_passed"], line["item_samples"]) for line in third} == {(3, 4)})
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["n"], summary["items"], summary["samples_per_item"]) == (N * M, N, M)
    assert summary["pass_rate_ci95"]["method"] == "item-clustered"
    wide, narrow = summary["pass_rate_ci95"], summary["pass_rate_ci95_if_independent"]
    assert wide["high"] - wide["low"] > narrow["high"] - narrow["low"]
    manifest = json.loads((run / "manifest.json").read_text())
    assert (manifest["n_items"], manifest["samples_per_item"]) == (N, M)


def test_a_multi_sample_run_is_byte_identical_when_repeated(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    write_dataset(tmp_path / "math_dev.jsonl")
    pack = write_pack(tmp_path / "pack.jsonl", lambda i: i % 3)
    a, b = evaluate(run_in_process, tmp_path, "a", pack), evaluate(run_in_process, tmp_path, "b", pack)
    for name in ("results.jsonl", "summary.json", "summary.md"):
        assert (a / name).read_bytes() == (b / name).read_bytes()


def test_a_rollouts_file_still_gives_a_one_sample_run_with_wilsons_interval(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    write_dataset(tmp_path / "math_dev.jsonl")
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text("".join(dumps_line({"id": f"d-{i:03d}", "completion": f"Final: {i}", "policy": "p",
                                            "sampling": SAMPLING}) + "\n" for i in range(N)))
    run = evaluate(run_in_process, tmp_path, "one", rollouts)
    first = json.loads((run / "results.jsonl").read_text().splitlines()[0])
    assert sorted(first) == ["completion", "details", "expected", "id", "reward"]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["pass_rate_ci95"]["method"] == "wilson" and "samples_per_item" not in summary


def test_items_with_different_numbers_of_samples_are_refused_naming_the_line(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    write_dataset(tmp_path / "math_dev.jsonl")
    pack = write_pack(tmp_path / "pack.jsonl", lambda i: 1)
    lines = pack.read_text().splitlines()
    item = json.loads(lines[2])
    item["samples"] = item["samples"][:3]
    lines[2] = dumps_line(item)
    pack.write_text("\n".join(lines) + "\n")
    proc = run_in_process("course.eval", ["--dataset", str(tmp_path / "math_dev.jsonl"), "--completions", str(pack),
                                          "--outdir", str(tmp_path / "r")], cwd=tmp_path)
    assert proc.returncode == 2 and not (tmp_path / "r").exists()
    assert "pack.jsonl:3: id 'd-002' has 3 samples, the first item 4" in proc.stderr


def _gate(run_in_process, tmp_path, base, cand, *extra):  # type: ignore[no-untyped-def]
    return run_in_process("course.gate", ["--baseline", str(base), "--candidate", str(cand), *extra], cwd=tmp_path)


def test_the_gate_pairs_two_multi_sample_runs_over_items_and_accepts_a_clear_lift(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    write_dataset(tmp_path / "math_dev.jsonl")
    base = evaluate(run_in_process, tmp_path, "base", write_pack(tmp_path / "b.jsonl", lambda i: i % 2))
    cand = evaluate(run_in_process, tmp_path, "cand", write_pack(tmp_path / "c.jsonl", lambda i: 2 + i % 2))
    proc = _gate(run_in_process, tmp_path, base, cand, "--min-delta", "0.2", "--require-significance", "--json")
    assert proc.returncode == 0, proc.stdout
    result = json.loads(proc.stdout)
    paired = result["paired"]
    assert (paired["method"] == "per-item pass rates"
            and (paired["higher"], paired["lower"], paired["equal"]) == (N, 0, 0))
    assert result["delta"] == 0.5 and paired["difference"] == 0.5 and paired["p_value"] < 0.001
    text = _gate(run_in_process, tmp_path, base, cand, "--min-delta", "0.2").stdout
    assert "pass@1: 20/160 samples = 12.5% over 40 items x 4" in text
    assert "sign-flip test over items p = " in text and "95% interval for the change (from the same test)" in text


def test_the_same_multi_sample_runs_get_the_same_decision_every_time(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    write_dataset(tmp_path / "math_dev.jsonl")
    base = evaluate(run_in_process, tmp_path, "base", write_pack(tmp_path / "b.jsonl", lambda i: i % 3))
    cand = evaluate(run_in_process, tmp_path, "cand", write_pack(tmp_path / "c.jsonl", lambda i: (i + 1) % 4))
    outputs = {_gate(run_in_process, tmp_path, base, cand, "--min-delta", "0", "--json").stdout for _ in range(2)}
    assert len(outputs) == 1


def test_the_gate_refuses_a_multi_sample_run_whose_samples_are_out_of_order(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    write_dataset(tmp_path / "math_dev.jsonl")
    base = evaluate(run_in_process, tmp_path, "base", write_pack(tmp_path / "b.jsonl", lambda i: 1))
    lines = (base / "results.jsonl").read_text().splitlines()
    lines[1], lines[2] = lines[2], lines[1]
    (base / "results.jsonl").write_text("\n".join(lines) + "\n")
    manifest = json.loads((base / "manifest.json").read_text())
    manifest["results_sha256"] = sha256_file(base / "results.jsonl")
    (base / "manifest.json").write_text(json.dumps(manifest))
    proc = _gate(run_in_process, tmp_path, base, base, "--min-delta", "0")
    assert proc.returncode == 2 and "results.jsonl:2: id d-000 has sample_index 2, expected 1" in proc.stderr


def test_power_reads_the_rate_and_rho_from_a_multi_sample_run(run_in_process, tmp_path):  # type: ignore[no-untyped-def]
    write_dataset(tmp_path / "math_dev.jsonl")
    run = evaluate(run_in_process, tmp_path, "x4", write_pack(tmp_path / "pack.jsonl", lambda i: 4 * (i % 4 == 0)))
    proc = run_in_process("course.power", ["--from-run", str(run), "--lift", "0.1", "--json"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    table = json.loads(proc.stdout)
    assert table["baseline_rate"] == 0.25 and table["icc"] == 1.0  # all-or-nothing items
