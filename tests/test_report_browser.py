"""course.report in a real browser: headless Chromium (the OS package) opens the pages of the bundled runs.

For each page: a screenshot is taken (a PNG of real size), and the DOM after the
script ran (``--dump-dom``) is checked: the title, the pass-rate figure, the
table the script built (``data-ready``), and no console message at all (a
script error, a Content Security Policy refusal or a failed load would each
print one). The hostile page must not have run any of its completions.

Chromium comes from the OS (``apt-get install chromium``; CI's ``.ci/run``
installs it); without it these tests are skipped, saying so.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

import course.report as report

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_runs import build_runs  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium); browser checks skipped")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000"]
CONSOLE = re.compile(r":CONSOLE(?:\(\d+\))?[:\]]|Uncaught|Refused to")


def chromium(page: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    profile.mkdir()
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()], capture_output=True,
                          text=True, timeout=120, cwd=tmp)


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("browser")
    runs = build_runs(root)
    out = {}
    for name, paths in {"eval": [runs["eval"]], "selection": [runs["sel_n4"]], "gate": [runs["sel_n1"], runs["sel_n4"]],
                        "tinylm_rl": [runs["tinylm_rl"]], "hostile": [runs["hostile"]]}.items():
        target = root / f"{name}.html"
        target.write_text(report.build([str(p) for p in paths], Fraction(0), False), encoding="utf-8")
        out[name] = target
    return out


@pytest.fixture(scope="module")
def chromium_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("chromium")


@pytest.fixture(scope="module")
def doms(pages, chromium_dir) -> dict[str, tuple[str, str]]:
    """name -> (DOM after the script ran, Chromium's log). The eval page's launch also takes its
    screenshot (eval.png): one Chromium start fewer, about a second each."""
    tmp = chromium_dir
    result = {}
    for name, page in pages.items():
        shot = [f"--screenshot={tmp / 'eval.png'}", "--window-size=1200,1600"] if name == "eval" else []
        proc = chromium(page, tmp, "--dump-dom", *shot)
        assert proc.returncode == 0, proc.stderr[-2000:]
        result[name] = (proc.stdout, proc.stderr)
    return result


def test_a_screenshot_of_the_eval_report_is_a_real_image(doms, chromium_dir):
    shot = chromium_dir / "eval.png"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    assert not CONSOLE.search(doms["eval"][1]), doms["eval"][1]


@pytest.mark.parametrize("name", ["eval", "selection", "gate", "tinylm_rl", "hostile"])
def test_the_page_loads_without_a_single_console_message(doms, name):
    dom, log = doms[name]
    assert not [line for line in log.splitlines() if CONSOLE.search(line)]
    assert "</html>" in dom


@pytest.mark.parametrize("name,title,figure", [
    ("eval", "Evaluation report:", "Pass rate: 30/100 = 30.0% (95% CI 21.9%–39.6%)"),
    ("selection", "Selection (best-of-N) report:", "Pass rate: 68/100 = 68.0% (95% CI 58.3%–76.3%)"),
    ("gate", "Comparison of 2 runs:", "Decision: REJECT (Locked Room violated: selection.n differs)"),
    ("tinylm_rl", "Tiny LM RL report:", "GOODHART ALARM"),
])
def test_the_rendered_page_has_its_title_and_headline_figure(doms, name, title, figure):
    dom, _ = doms[name]
    assert re.search(r"<title>" + re.escape(title), dom)
    assert figure in dom


@pytest.mark.parametrize("name", ["eval", "selection", "gate", "tinylm_rl"])
def test_the_script_built_every_item_table(doms, name):
    dom, _ = doms[name]
    boxes = dom.count('class="items"')
    assert boxes >= 1 and dom.count('data-ready="1"') == boxes
    assert re.search(r'class="pageinfo">items 1–50 of \d+', dom)


def test_no_hostile_completion_ran_in_the_browser(doms):
    dom, _ = doms["hostile"]
    assert "PWNED" not in re.search(r"<title>(.*?)</title>", dom, re.S).group(1)
    assert "<img" not in dom
