"""course.report in a real browser: headless Chromium (the OS package) opens the pages of the bundled runs.

One browser serves every page (tests/headless_chromium.py: the DevTools protocol over a pipe; a
Chromium start costs a second or more). For each page the DOM after the script ran is checked: the
title, the pass-rate figure, the table the script built (``data-ready``), and no message at all
from the page: no console call, no uncaught exception, no log entry (a Content Security Policy
refusal or a failed load is one), and no console line in Chromium's own log. A screenshot of the
eval page is a real PNG. The hostile page must not have run any of its completions.

Chromium comes from the OS (``apt-get install chromium``; CI's ``.ci/run``
installs it); without it these tests are skipped, saying so.
"""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pytest
from headless_chromium import CHROMIUM, Browser, Page
from report_runs import build_runs

import course.report as report

pytestmark = pytest.mark.skipif(CHROMIUM is None,
                                reason="chromium is not installed (apt-get install chromium); browser checks skipped")
CONSOLE = re.compile(r":CONSOLE(?:\(\d+\))?[:\]]|Uncaught|Refused to")


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
def opened(pages, tmp_path_factory) -> tuple[dict[str, Page], str]:
    """name -> the page as Chromium rendered it (the eval page with a 1200x1600 screenshot), and Chromium's log."""
    with Browser(tmp_path_factory.mktemp("chromium")) as browser:
        rendered = {name: browser.open(page.as_uri(), screenshot=name == "eval") for name, page in pages.items()}
    return rendered, browser.log.read_text(encoding="utf-8", errors="replace")


@pytest.fixture(scope="module")
def doms(opened) -> dict[str, str]:
    return {name: page.dom for name, page in opened[0].items()}


def test_a_screenshot_of_the_eval_report_is_a_real_image(opened):
    shot = opened[0]["eval"].png
    assert shot is not None and shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 20_000


def test_chromium_logged_no_console_line_for_any_page(opened):
    _, log = opened
    assert not [line for line in log.splitlines() if CONSOLE.search(line)], log[-3000:]


@pytest.mark.parametrize("name", ["eval", "selection", "gate", "tinylm_rl", "hostile"])
def test_the_page_loads_without_a_single_console_message(opened, name):
    page = opened[0][name]
    assert page.messages == (), page.messages
    assert "</html>" in page.dom


@pytest.mark.parametrize("name,title,figure", [
    ("eval", "Evaluation report:", "Pass rate: 30/100 = 30.0% (95% CI 21.9%–39.6%)"),
    ("selection", "Selection (best-of-N) report:", "Pass rate: 68/100 = 68.0% (95% CI 58.3%–76.3%)"),
    ("gate", "Comparison of 2 runs:", "Decision: REJECT (Locked Room violated: selection.n differs)"),
    ("tinylm_rl", "Tiny LM RL report:", "GOODHART ALARM"),
])
def test_the_rendered_page_has_its_title_and_headline_figure(doms, name, title, figure):
    dom = doms[name]
    assert re.search(r"<title>" + re.escape(title), dom)
    assert figure in dom


@pytest.mark.parametrize("name", ["eval", "selection", "gate", "tinylm_rl"])
def test_the_script_built_every_item_table(doms, name):
    dom = doms[name]
    boxes = dom.count('class="items"')
    assert boxes >= 1 and dom.count('data-ready="1"') == boxes
    assert re.search(r'class="pageinfo">items 1–50 of \d+', dom)


def test_no_hostile_completion_ran_in_the_browser(doms):
    dom = doms["hostile"]
    assert "PWNED" not in re.search(r"<title>(.*?)</title>", dom, re.S).group(1)
    assert "<img" not in dom
