"""Fault suite for ``course.rollout_sample`` (issue #12, class 9: it survives any server).

Every fault must end in ONE error line on stderr (no traceback) with the documented exit code,
and whatever was already written must stay whole lines that a rerun resumes to exactly the
bytes an undisturbed run writes. The server is ``tests/fake_openai_server.py`` on 127.0.0.1;
retries use ``--backoff 0`` so no test sleeps.

Kinds of fault, one parametrised test each:
  * malformed 200 answers (non-JSON, truncated, wrong shapes, wrong choice counts, 5 MB);
  * hostile error answers (5 MB bodies, escape sequences, NUL, RLO);
  * API keys no HTTP header can carry (refused before any request, never shown);
  * ``--out`` that is not a regular file (refused before any request, never hangs);
  * interrupted writes (kill -9 mid-run, torn last lines, a disk filling up mid-line).
"""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import fake_openai_server as fake  # tests/fake_openai_server.py: stdlib only, no openai
import pytest

from course import rollout_sample as rs
from course.cli import EXIT_PIPE_CLOSED
from course.lib.external import chat_endpoint

# A skip mark, not an import: openai takes over a second to import, and every pytest-xdist worker collects this file.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("openai") is None,
                                reason="the sampler's tests need the openai extra")

REPO = Path(__file__).resolve().parents[2]
KEY = "gsk_FAULT-SUITE-KEY-9q8w7e"
PROMPTS = [
    ("f-0001", "What is 2 + 3?", 5),
    ("f-0002", "What is 40 + 2?", 42),
    ("f-0003", "What is 6 * 7?", 42),
    ("f-0004", "What is 9 - 4?", 5),
]
BAD_ITEM = "f-0003"  # the faults below hit the third item: two whole lines must survive
TERMINAL_HAZARDS = ("\x1b", "\u202e", "\x00", "\x07", "\x9b")


@pytest.fixture
def lab(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GROQ_API_KEY", KEY)
    with open("data.jsonl", "w", encoding="utf-8") as f:
        for item_id, prompt, answer in PROMPTS:
            f.write(json.dumps({"id": item_id, "prompt": prompt, "expected_answer": answer}) + "\n")
    with fake.FakeOpenAIServer() as server:
        yield server


def argv(server, *extra: str, out: str = "out.jsonl") -> list[str]:
    return ["--dataset", "data.jsonl", "--model", "fake-model", "--out", out,
            "--base-url", server.base_url, "--backoff", "0", *extra]


def reference(server, *extra: str) -> bytes:
    """What an undisturbed run writes (the server answers deterministically)."""
    before = len(server.requests)
    assert rs.main(argv(server, *extra, out="reference.jsonl")) == 0
    del server.requests[before:]
    return Path("reference.jsonl").read_bytes()


def assert_one_error_line(err: str, *, contains: str = "") -> str:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err[-2000:]
    assert "Traceback" not in err
    assert contains in lines[0], lines[0]
    for hazard in TERMINAL_HAZARDS:
        assert hazard not in err
    return lines[0]


def assert_whole_lines_then_resume(server, expected: bytes, kept: int, *extra: str) -> None:
    data = Path("out.jsonl").read_bytes()
    assert data.count(b"\n") == kept and (not data or data.endswith(b"\n"))
    assert expected.startswith(data)
    assert rs.main(argv(server, *extra)) == 0
    assert Path("out.jsonl").read_bytes() == expected


# ---------------------------------------------------------------------------
# Malformed 200 answers: exit 2, item named, what is wrong, bounded excerpt; the rerun resumes.
# ---------------------------------------------------------------------------
def _choice(content, index=0):
    return {"index": index, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}


MALFORMED = {
    "html_with_json_content_type": (b"<html><body>502 Bad Gateway</body></html>", "not JSON"),
    "truncated_json": (b'{"id": "x", "choices": [{"index": 0, "message": {"content": "Fin', "truncated JSON"),
    "empty_body": (b"", "empty"),
    "whitespace_body": (b"  \n", "empty"),
    "not_utf8": (b'{"choices": "\xff\xfe"}', "not UTF-8"),
    "nan_constant": (b'{"choices": NaN}', "not JSON"),
    "deeply_nested": (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
    "top_level_list": (b"[1, 2]", "the body is an array"),
    "top_level_string": (b'"Final: 42"', "the body is a string"),
    "choices_is_a_string": (b'{"choices": "Final: 42"}', "'choices' is a string"),
    "choices_is_null": (b'{"choices": null}', "'choices' is null"),
    "choices_is_an_object": (b'{"choices": {"0": {}}}', "'choices' is an object"),
    "no_choices": (b'{"id": "x"}', "no 'choices'"),
    "error_object_with_200": (b'{"error": {"message": "overloaded"}}', "it has 'error'"),
    "choice_is_a_string": (b'{"choices": ["Final: 42"]}', "choice 0 is a string"),
    "choice_without_message": (b'{"choices": [{"index": 0, "text": "Final: 42"}]}', "no 'message'"),
    "message_is_null": (b'{"choices": [{"index": 0, "message": null}]}', "'message' is null"),
    "message_is_a_string": (b'{"choices": [{"index": 0, "message": "Final: 42"}]}', "'message' is a string"),
    "message_without_content": (b'{"choices": [{"index": 0, "message": {"role": "assistant"}}]}', "no 'content'"),
    "content_is_a_number": (json.dumps({"choices": [_choice(42)]}).encode(), "'content' is an integer"),
    "content_is_a_boolean": (json.dumps({"choices": [_choice(True)]}).encode(), "'content' is a boolean"),
    "content_is_a_list_of_parts": (json.dumps({"choices": [_choice([{"type": "text", "text": "Final: 42"}])]}).encode(),
                                   "'content' is an array"),
    "content_is_an_object": (json.dumps({"choices": [_choice({"text": "Final: 42"})]}).encode(),
                             "'content' is an object"),
    "content_lone_surrogate": (b'{"choices": [{"index": 0, "message": {"content": "Final: \\udc00"}}]}',
                               "lone surrogate"),
    "index_is_a_string": (json.dumps({"choices": [{**_choice("Final: 42"), "index": "0"}]}).encode(),
                          "'index' is a string"),
    "index_out_of_range": (json.dumps({"choices": [_choice("Final: 42", index=3)]}).encode(), "choice indices [3]"),
    "five_megabytes_of_junk": (b"\x1b[2J" + "\u202e".encode() + b"A" * 5_000_000, "not JSON"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_answer_stops_with_exit_2_naming_the_item_and_the_file_resumes(lab, capsys, name):
    body, what = MALFORMED[name]
    expected = reference(lab)
    lab.raw(3, body)
    assert rs.main(argv(lab)) == 2
    line = assert_one_error_line(capsys.readouterr().err, contains=f"stopped at {BAD_ITEM}: ")
    assert what in line and "is not a chat completion" in line
    assert len(line) < 2500  # a bounded excerpt (200 characters, each escape at most 8 wide), whatever the body's size
    assert_whole_lines_then_resume(lab, expected, kept=2)


WRONG_COUNTS = {
    "no_choices_for_n_1": (json.dumps({"choices": []}).encode(), 1, "returned 0 choice(s) where n=1"),
    "two_choices_for_n_1": (json.dumps({"choices": [_choice("a"), _choice("b", 1)]}).encode(), 1,
                            "returned 2 choice(s) where n=1"),
    "one_choice_for_native_n_3": (json.dumps({"choices": [_choice("a")]}).encode(), 3,
                                  "returned 1 choice(s) where n=3"),
    "four_choices_for_native_n_3": (json.dumps({"choices": [_choice("a", i) for i in range(4)]}).encode(), 3,
                                    "returned 4 choice(s) where n=3"),
}


@pytest.mark.parametrize("name", sorted(WRONG_COUNTS))
def test_the_wrong_number_of_choices_stops_with_exit_2_naming_the_item(lab, capsys, name):
    body, n, what = WRONG_COUNTS[name]
    extra = ("--n", str(n), "--n-strategy", "native") if n > 1 else ()
    expected = reference(lab, *extra)
    lab.raw(3, body)
    assert rs.main(argv(lab, *extra)) == 2
    assert what in assert_one_error_line(capsys.readouterr().err, contains=f"stopped at {BAD_ITEM}: ")
    assert_whole_lines_then_resume(lab, expected, 2, *extra)


def test_duplicate_choice_indices_are_refused(lab, capsys):
    lab.raw(1, json.dumps({"choices": [_choice("a", 0), _choice("b", 0)]}).encode())
    assert rs.main(argv(lab, "--n", "2", "--n-strategy", "native")) == 2
    assert "index 0 appears twice" in assert_one_error_line(capsys.readouterr().err)
    assert not Path("out.jsonl").exists()


def test_a_null_content_is_recorded_as_an_empty_completion_not_an_error(lab):
    # content: null is valid OpenAI (a refusal, a reasoning model out of budget): the model gave no answer.
    lab.raw(1, json.dumps({"choices": [_choice(None)]}).encode())
    assert rs.main(argv(lab, "--limit", "1")) == 0
    assert json.loads(Path("out.jsonl").read_text())["completion"] == ""


# ---------------------------------------------------------------------------
# Hostile error answers: bounded, escaped, redacted; the documented exit code.
# ---------------------------------------------------------------------------
HOSTILE_ERRORS = {
    # name: (status, body, exit code, text expected in the error line)
    "400_with_5_MB_text": (400, b"x" * 5_000_000, 2, "HTTP 400: xxx"),
    "400_with_5_MB_json_message": (400, json.dumps({"error": {"message": "y" * 5_000_000}}).encode(), 2,
                                   "HTTP 400: yyy"),
    "404_model_not_found_with_escapes": (404,
                                         json.dumps({"error": {"message": "\x1b[31mno model\u202e\x00"}}).encode(),
                                         2, "⟨U+001B⟩[31mno model⟨U+202E⟩⟨U+0000⟩"),
    "500_with_5_MB_html": (500, b"<html>" + b"z" * 5_000_000, 1, "gave up after 0 retries"),
    "503_with_binary_junk": (503, bytes(range(256)) * 20_000, 1, "HTTP 503"),
    "422_empty_body": (422, b"", 2, "HTTP 422: (empty body)"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_ERRORS))
def test_an_error_answer_is_shown_as_a_bounded_escaped_excerpt(lab, capsys, name):
    status, body, code, text = HOSTILE_ERRORS[name]
    expected = reference(lab)
    lab.raw(3, body, status=status)
    assert rs.main(argv(lab, "--max-retries", "0")) == code
    err = capsys.readouterr().err
    line = assert_one_error_line(err, contains=f"stopped at {BAD_ITEM}: ")
    assert text in line and len(err) < 3000
    assert_whole_lines_then_resume(lab, expected, kept=2)


def test_a_retried_error_with_escapes_is_logged_escaped(lab, capsys):
    lab.raw(1, json.dumps({"error": {"message": "busy\x1b]0;pwned\x07\u202e"}}).encode(), status=503)
    assert rs.main(argv(lab, "--limit", "1")) == 0
    err = capsys.readouterr().err
    assert "busy⟨U+001B⟩]0;pwned⟨U+0007⟩⟨U+202E⟩; retry 1/5" in err
    assert not any(h in err for h in TERMINAL_HAZARDS)


def test_a_5_mb_error_that_echoes_the_key_deep_inside_is_redacted_before_it_is_cut(lab, capsys):
    lab.raw(1, b"a" * 190 + f"Invalid key {KEY}".encode() + b"b" * 5_000_000, status=401)
    assert rs.main(argv(lab)) == 2
    err = capsys.readouterr().err
    assert KEY[:8] not in err  # not even the start of it, cut at the excerpt boundary
    assert_one_error_line(err, contains="rejected the API key")


# ---------------------------------------------------------------------------
# Keys: refused before any request, never shown.
# ---------------------------------------------------------------------------
SECRET = "Zq7Xw3Kp9Lm2"
BAD_KEYS = {
    "non_ascii_letter": (f"{SECRET}é", "a non-ASCII character"),
    "no_break_space": (f"{SECRET}\u00a0x", "a non-ASCII character"),
    "right_to_left_override": (f"\u202e{SECRET}", "a non-ASCII character at position 1"),
    "nul": (f"{SECRET}\x00", "a NUL character"),
    "newline_inside": (f"{SECRET}\nX-Evil: 1", "a control character"),
    "trailing_carriage_return": (f"{SECRET}\r", "a control character"),
    "escape": (f"\x1b[2J{SECRET}", "a control character at position 1"),
    "tab": (f"{SECRET}\tx", "a control character"),
    "delete": (f"{SECRET}\x7f", "a control character"),
    "space_inside": (f"{SECRET[:6]} {SECRET[6:]}", "a space at position 7"),
    "lone_surrogate": (f"{SECRET}\udc80", "a non-ASCII character"),
}


@pytest.mark.parametrize("name", sorted(BAD_KEYS))
def test_a_key_no_header_can_carry_is_refused_before_any_request_and_never_shown(lab, capsys, monkeypatch, name):
    key, kind = BAD_KEYS[name]
    if "\x00" in key:  # an environment variable cannot hold NUL; a .env file can
        monkeypatch.delenv("GROQ_API_KEY")
        Path(".env").write_text(f'GROQ_API_KEY="{key}"\n', encoding="utf-8")
    else:  # a lone surrogate is how Python shows non-UTF-8 bytes of the environment
        monkeypatch.setenv("GROQ_API_KEY", key)
    assert rs.main(argv(lab)) == 2
    captured = capsys.readouterr()
    line = assert_one_error_line(captured.err, contains="the API key has")
    assert kind in line and "not shown" in line
    for part in (SECRET[i:i + 3] for i in range(len(SECRET) - 2)):
        assert part not in captured.err and part not in captured.out
    assert lab.requests == [] and not Path("out.jsonl").exists()


# ---------------------------------------------------------------------------
# --out that is not a regular file: refused up front, with or without --force; never hangs.
# ---------------------------------------------------------------------------
def _make_out(kind: str) -> str:
    if kind == "directory":
        os.mkdir("target")
        Path("target/notes.txt").write_text("mine\n")
        return "target"
    if kind == "fifo":
        os.mkfifo("target")
        return "target"
    if kind == "char_device":
        return os.devnull
    if kind == "dangling_symlink":
        os.symlink("missing/nowhere.jsonl", "target")
        return "target"
    if kind == "under_a_file":
        Path("plain").write_text("x\n")
        return "plain/out.jsonl"
    if kind == "foreign_file_with_force":
        Path("target").write_text("my notes, not rollouts\n")
        return "target"
    raise AssertionError(kind)


OUT_KINDS = {
    "directory": "is a directory",
    "fifo": "is not a regular file (a FIFO (named pipe)); refusing to write to it",
    "char_device": "is not a regular file (a character device)",
    "dangling_symlink": "symbolic link to a missing file",
    "under_a_file": "is a file, not a directory",
    "foreign_file_with_force": "--force only starts over a rollouts file this tool wrote",
}


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
@pytest.mark.parametrize("kind", sorted(OUT_KINDS))
def test_an_out_that_cannot_hold_rollouts_is_refused_before_any_request(lab, capsys, kind, force):
    if kind == "foreign_file_with_force" and not force:
        pytest.skip("without --force a foreign file is refused by the resume check (tested in test_rollout_sample.py)")
    target = _make_out(kind)
    before = sorted(p.name for p in Path(".").iterdir())
    assert rs.main(argv(lab, *(["--force"] if force else []), out=target)) == 2
    assert_one_error_line(capsys.readouterr().err, contains=OUT_KINDS[kind])
    assert lab.requests == []
    assert sorted(p.name for p in Path(".").iterdir()) == before
    if kind == "directory":
        assert Path("target/notes.txt").read_text() == "mine\n"
    if kind == "foreign_file_with_force":
        assert Path("target").read_text() == "my notes, not rollouts\n"


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only directories")
def test_an_out_in_a_read_only_directory_is_refused_before_any_request(lab, capsys):
    os.mkdir("ro")
    os.chmod("ro", 0o555)
    try:
        assert rs.main(argv(lab, out="ro/out.jsonl")) == 2
    finally:
        os.chmod("ro", 0o755)
    assert_one_error_line(capsys.readouterr().err, contains="is not writable")
    assert lab.requests == []


def test_force_replaces_its_own_file_by_a_rename_and_leaves_no_temporary_file(lab):
    assert rs.main(argv(lab, "--limit", "2")) == 0
    assert rs.main(argv(lab, "--temperature", "0.1", "--force")) == 0
    assert {json.loads(x)["sampling"]["temperature"] for x in Path("out.jsonl").read_text().splitlines()} == {0.1}
    assert [p.name for p in Path(".").iterdir() if p.name.startswith(".out.jsonl.")] == []


def test_force_keeps_the_old_file_whole_when_the_first_new_item_fails(lab, capsys):
    assert rs.main(argv(lab)) == 0
    old = Path("out.jsonl").read_bytes()
    lab.raw(len(lab.requests) + 1, b"<html>")
    assert rs.main(argv(lab, "--temperature", "0.1", "--force")) == 2
    assert Path("out.jsonl").read_bytes() == old
    assert [p.name for p in Path(".").iterdir() if p.name.startswith(".out.jsonl.")] == []


# ---------------------------------------------------------------------------
# Interrupted writes: whole lines survive; a torn tail is dropped and said; the rerun completes.
# ---------------------------------------------------------------------------
TORN_TAILS = {
    "one_byte": lambda line: line[:1],
    "half_a_line": lambda line: line[: len(line) // 2],
    "all_but_the_newline": lambda line: line[:-1],
    "mid_utf8_character": lambda line: line[: line.index(b"\xe2\x88\x92") + 1],
    "zero_filled_blocks_after_power_loss": lambda line: b"\x00" * 4096,
}


@pytest.mark.parametrize("name", sorted(TORN_TAILS))
def test_a_torn_last_line_is_dropped_said_and_resampled(lab, capsys, name):
    expected = reference(lab)
    lines = expected.splitlines(keepends=True)
    third = lines[2].replace(b'"completion": "', '"completion": "\u2212'.encode())  # a multi-byte character to cut
    Path("out.jsonl").write_bytes(lines[0] + lines[1] + TORN_TAILS[name](third))
    assert rs.main(argv(lab)) == 0
    assert Path("out.jsonl").read_bytes() == expected
    err = capsys.readouterr().err
    assert "was cut off by an interruption" in err and "item 3 sampled again" in err
    assert len(lab.requests) == 2


def test_a_disk_filling_up_mid_line_leaves_whole_lines_and_the_rerun_resumes(lab, capsys, monkeypatch):
    expected = reference(lab)
    real_write, calls = os.write, []

    def full_disk_on_the_third_line(fd, data):
        calls.append(len(data))
        if len(calls) == 3:
            real_write(fd, bytes(data[: len(data) // 2]))  # half the line reaches the disk...
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "out.jsonl")  # ...then it is full
        return real_write(fd, data)

    monkeypatch.setattr(chat_endpoint, "_os_write", full_disk_on_the_third_line)
    assert rs.main(argv(lab)) == 2
    line = assert_one_error_line(capsys.readouterr().err, contains="cannot write out.jsonl (No space left on device)")
    assert "keeps 2 finished item(s), all whole lines" in line
    monkeypatch.setattr(chat_endpoint, "_os_write", real_write)
    assert_whole_lines_then_resume(lab, expected, kept=2)


def test_an_fsync_error_is_one_line_and_nothing_half_written_remains(lab, capsys, monkeypatch):
    expected = reference(lab)

    def eio(fd):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    real_fsync = os.fsync
    monkeypatch.setattr(chat_endpoint.os, "fsync", eio)
    assert rs.main(argv(lab)) == 2
    assert_one_error_line(capsys.readouterr().err, contains="Input/output error")
    monkeypatch.setattr(chat_endpoint.os, "fsync", real_fsync)
    assert not Path("out.jsonl").exists()  # the first line never made it: a fresh start, nothing to resume
    assert rs.main(argv(lab)) == 0 and Path("out.jsonl").read_bytes() == expected


def test_kill_9_mid_run_leaves_whole_lines_and_the_rerun_resumes(lab, tmp_path):
    expected = reference(lab)
    lab.fail(3, "stall")  # the third item's request hangs: the process is killed while it waits
    env = {**os.environ, "GROQ_API_KEY": KEY, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "course.rollout_sample", *argv(lab)], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while len(lab.requests) < 3 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        assert len(lab.requests) == 3, "the run never reached the third item"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    lab._failures.clear()  # the stall was for the killed run only
    assert_whole_lines_then_resume(lab, expected, kept=2)


def test_a_second_run_on_the_same_out_is_refused_while_the_first_holds_it(lab, capsys):
    fcntl = pytest.importorskip("fcntl")
    expected = reference(lab)
    Path("out.jsonl").write_bytes(b"".join(expected.splitlines(keepends=True)[:2]))
    with open("out.jsonl", "ab") as held:  # the first run, mid-way
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        assert rs.main(argv(lab)) == 2
    assert_one_error_line(capsys.readouterr().err, contains="another run is writing it")
    assert_whole_lines_then_resume(lab, expected, kept=2)


def test_a_hand_edited_sampling_with_terminal_controls_is_reported_escaped(lab, capsys):
    assert rs.main(argv(lab, "--limit", "1")) == 0
    record = json.loads(Path("out.jsonl").read_text())
    record["sampling"]["note"] = "\u202e\x1b[2Jevil"
    Path("out.jsonl").write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    assert rs.main(argv(lab)) == 2
    assert "written with sampling" in assert_one_error_line(capsys.readouterr().err)


def test_a_temporary_left_by_a_killed_force_run_is_removed_by_the_next_run(lab):
    # What a run killed while starting --out over leaves: the marked temporary .out.jsonl.tmp/ holding
    # a torn first line (course.lib.records.temporaries); the next run in the folder removes it.
    code = ("import os, sys; from pathlib import Path; from course.lib.records import temporaries\n"
            "folder = temporaries.make(Path('out.jsonl'))\n"
            "(folder / 'out.jsonl').write_text('{\"id\": \"f-0001\"')\n"
            "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert Path(".out.jsonl.tmp/out.jsonl").exists()
    assert rs.main(argv(lab)) == 0
    assert not Path(".out.jsonl.tmp").exists()


def test_a_users_file_named_like_an_old_temporary_is_never_removed(lab):
    # Before issue 23, any .out.jsonl.tmp-PID whose PID was gone was deleted: a user's file too.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a PID that no longer runs
    mine = Path(f".out.jsonl.tmp-{dead.pid}")
    mine.write_text("my notes\n")
    assert rs.main(argv(lab)) == 0
    assert mine.read_text() == "my notes\n"


# ---------------------------------------------------------------------------
# Issue #23, class 7: nothing hangs, nothing huge is written, no success after a broken pipe,
# no completion of an old prompt kept, no key leaked.
# ---------------------------------------------------------------------------
def test_a_server_trickling_its_answer_cannot_outlast_the_total_timeout(lab, capsys):
    # One byte every 20 ms: each read takes far less than --timeout, so a per-read timeout never trips
    # and the ~300-byte answer would take over 6 s; the deadline covers the whole request.
    expected = reference(lab)
    lab.trickle(3, 0.02)
    assert rs.main(argv(lab, "--timeout", "0.5", "--max-retries", "0")) == 1
    line = assert_one_error_line(capsys.readouterr().err, contains=f"stopped at {BAD_ITEM}: timed out")
    assert "no complete answer within 0.5 s" in line
    lab.wait_answered(3)
    assert lab.trickled[3] < 150  # the client left long before the answer's end
    lab._trickle.clear()
    assert_whole_lines_then_resume(lab, expected, kept=2)


def test_a_trickled_answer_is_retried_on_a_fresh_connection_like_any_timeout(lab, capsys):
    lab.trickle(1, 0.02)
    assert rs.main(argv(lab, "--timeout", "0.5", "--limit", "1")) == 0
    err = capsys.readouterr().err
    assert "f-0001: timed out: no complete answer within 0.5 s" in err and "; retry 1/5" in err
    assert len(lab.requests) == 2


@pytest.mark.parametrize("declare_length", [True, False], ids=["content_length", "streamed"])
def test_an_answer_larger_than_any_completion_is_refused_before_it_is_read_and_never_written(
    lab, capsys, declare_length
):
    # --max-tokens 1: the cap is 8 MiB + 1 KiB; the server offers 64 MB of well-formed completion.
    expected = reference(lab, "--max-tokens", "1")
    lab.huge(3, 64 << 20, declare_length=declare_length)
    assert rs.main(argv(lab, "--max-tokens", "1")) == 2
    line = assert_one_error_line(capsys.readouterr().err, contains=f"stopped at {BAD_ITEM}: ")
    assert "is larger than 8,389,632 bytes" in line and "max_tokens=1" in line
    assert Path("out.jsonl").stat().st_size < 10_000
    lab.wait_answered(3)
    assert lab.huge_sent[3] < (32 << 20)  # not read to the end
    assert_whole_lines_then_resume(lab, expected, 2, "--max-tokens", "1")


def test_a_closed_output_pipe_stops_the_run_without_reporting_success_and_the_rerun_resumes(lab, tmp_path):
    # `rollout_sample ... 2>&1 | head -2`: the reader leaves after two lines of progress.
    expected = reference(lab)
    release = lab.hold(3)  # the third request waits until the pipe is closed, so the race is decided
    env = {**os.environ, "GROQ_API_KEY": KEY, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "course.rollout_sample", *argv(lab)], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        for _ in range(2):
            assert proc.stdout.readline()
        proc.stdout.close()  # head -2 exits
        release.set()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == EXIT_PIPE_CLOSED  # 141, as a shell reports SIGPIPE; never 0
    data = Path("out.jsonl").read_bytes()
    assert data.endswith(b"\n") and 1 <= data.count(b"\n") < 4  # stopped early, whole lines only
    assert_whole_lines_then_resume(lab, expected, kept=data.count(b"\n"))


def _rewrite_dataset(change):
    rows = [json.loads(x) for x in Path("data.jsonl").read_text().splitlines()]
    change(rows)
    Path("data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize("what", ["prompt", "expected_answer"])
def test_resume_refuses_a_file_whose_items_changed_in_the_dataset_since_and_force_starts_over(lab, capsys, what):
    assert rs.main(argv(lab, "--limit", "2")) == 0
    old = Path("out.jsonl").read_bytes()

    def change(rows):
        rows[0]["prompt" if what == "prompt" else "expected_answer"] = "What is 3 + 3?" if what == "prompt" else 6
    _rewrite_dataset(change)
    assert rs.main(argv(lab)) == 2
    line = assert_one_error_line(capsys.readouterr().err, contains="out.jsonl:1: item 'f-0001' was sampled for another")
    assert "--force" in line
    assert Path("out.jsonl").read_bytes() == old
    assert rs.main(argv(lab, "--force")) == 0
    first = json.loads(Path("out.jsonl").read_text().splitlines()[0])
    if what == "prompt":
        assert first["completion"] == fake.fake_completion("What is 3 + 3?", 1234)
    assert first["item_sha256"] != json.loads(old.splitlines()[0])["item_sha256"]


def test_resume_refuses_a_line_that_does_not_record_which_prompt_it_answers(lab, capsys):
    assert rs.main(argv(lab, "--limit", "2")) == 0
    lines = [json.loads(x) for x in Path("out.jsonl").read_text().splitlines()]
    for record in lines:
        del record["item_sha256"]  # as written before items were fingerprinted
    Path("out.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines))
    assert rs.main(argv(lab)) == 2
    assert "no item_sha256" in assert_one_error_line(capsys.readouterr().err, contains="out.jsonl:1:")


def _pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


KEY_ECHOES = {
    "upper_cased": lambda key: f"Invalid API key {key.upper()}",
    "split_by_a_newline": lambda key: f"Invalid API key {key[:10]}\n{key[10:]}",
    "spaced_out": lambda key: "Invalid API key " + " ".join(key),
    "zero_width_inside": lambda key: f"Invalid API key {key[:5]}\u200b{key[5:]}",
    "split_in_two_halves": lambda key: f"first half {key[:len(key) // 2]} ... second half {key[len(key) // 2:]}",
    "upper_cased_halves_over_lines": lambda key: "\n".join(_pieces(key.upper(), len(key) // 2 + 1)),
    # Issue 30 item 9: forms NFKC folds back to the key, and accents on every character.
    "fullwidth": lambda key: "Invalid API key " + "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in key),
    "combining_marks_on_every_character": lambda key: "Invalid API key " + "".join(c + "\u0301\u0323" for c in key),
    "mathematical_sans_serif_upper_case": lambda key: "Invalid API key " + "".join(
        chr(0x1D5A0 + ord(c) - 65) if "A" <= c <= "Z" else c for c in key.upper()),
}


def _as_read(text: str) -> str:
    """``text`` as a reader sees it: compatibility forms and case folded, accents and invisible characters gone
    (written here without the redaction module, so the check does not share its mistakes)."""
    import unicodedata

    decomposed = unicodedata.normalize("NFKD", text)
    kept = "".join(c for c in decomposed if unicodedata.category(c)[0] not in "MZC" and not c.isspace())
    return unicodedata.normalize("NFKC", kept).lower()


def _assert_no_piece_of_the_key(text: str) -> None:
    folded = _as_read(text)
    for i in range(len(KEY) - 7):
        assert KEY[i:i + 8].lower() not in folded, text[-500:]


@pytest.mark.parametrize("name", sorted(KEY_ECHOES))
def test_an_error_that_echoes_the_key_in_another_form_is_redacted(lab, capsys, name):
    lab.echo_key(1, KEY_ECHOES[name], status=401)
    assert rs.main(argv(lab)) == 2
    err = capsys.readouterr().err
    assert_one_error_line(err, contains="rejected the API key")
    assert "[redacted]" in err
    _assert_no_piece_of_the_key(err)


@pytest.mark.parametrize("name", sorted(KEY_ECHOES))
def test_a_reply_that_echoes_the_key_reaches_no_rollout_result_or_summary(lab, capsys, name):
    lab.echo_key(2, lambda key: "Final: 42\n" + KEY_ECHOES[name](key))
    assert rs.main(argv(lab)) == 0
    rollouts = Path("out.jsonl").read_text(encoding="utf-8")
    _assert_no_piece_of_the_key(rollouts)
    assert "[redacted]" in json.loads(rollouts.splitlines()[1])["completion"]
    assert "f-0002: the answer gave the API key away" in capsys.readouterr().err
    from course.eval import main as eval_main

    assert eval_main(["--dataset", "data.jsonl", "--completions", "out.jsonl", "--outdir", "runs/echo"]) == 0
    for written in Path("runs/echo").rglob("*"):
        if written.is_file():
            _assert_no_piece_of_the_key(written.read_text(encoding="utf-8", errors="replace"))


def test_a_very_short_key_does_not_blank_out_ordinary_text_and_is_said_to_be_unredacted(lab, capsys, monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", "o")
    lab.raw(1, json.dumps({"error": {"message": "model not found"}}).encode(), status=404)
    assert rs.main(argv(lab)) == 2
    err = capsys.readouterr().err
    assert "HTTP 404: model not found" in assert_one_error_line(err)
    assert "has 1 character(s), fewer than 8: it is not redacted" in err
    monkeypatch.setenv("GROQ_API_KEY", "ollama")  # a local server's placeholder key: completions stay as they are
    assert rs.main(argv(lab, "--limit", "1", out="short.jsonl")) == 0
    assert json.loads(Path("short.jsonl").read_text())["completion"] == fake.fake_completion(PROMPTS[0][1], 1234)
