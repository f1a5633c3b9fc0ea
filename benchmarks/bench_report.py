"""Benchmark: how big is a ``course.report`` page, how long does it take to write, and to render in a browser?

    python benchmarks/bench_report.py                   # 100 and 100,000 items
    python benchmarks/bench_report.py --sizes 100 10000 # quicker
    python benchmarks/bench_report.py --no-browser      # Python side only

For each size N it writes a synthetic dataset and rollouts (the generator of
``benchmarks/bench_eval.py``: a realistic mix of passes, slips and look-alike
characters) into a temporary directory, runs ``course.eval`` on them, and then
measures:

  * ``python -m course.report RUN`` in a fresh child process: wall time (reading
    results.jsonl + rendering + writing), peak RSS, and the size of report.html;
  * headless Chromium (``/usr/bin/chromium``, when installed) loading the file
    and taking a screenshot: wall time from process start to the PNG, with
    ``--virtual-time-budget`` so the table script has run; and the same with
    ``--dump-dom``, checking that the script built the table (``data-ready``).

The browser figure includes Chromium's own start-up (about a second), so it is
given next to the time for an empty page, measured the same way.

Then the table script itself, in the browser: a copy of the page (its Content
Security Policy removed so that one more script may run) times, with
``performance.now()``, a text filter over every row ("wrong", as if typed), a
sort by the reason column (click on its heading) and a page turn.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_eval import make_files  # noqa: E402  (the same synthetic data as the eval benchmark)
from record import Recorder, add_arguments  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--virtual-time-budget=5000", "--window-size=1200,1600"]


def _child(args: list[str], cwd: Path) -> tuple[float, float]:
    """Run a Python child; return (wall seconds, peak RSS of the child in MB)."""
    code = ("import resource, runpy, sys; sys.argv = {argv!r}; "
            "rc = 0\ntry:\n    runpy.run_module({mod!r}, run_name='__main__')\nexcept SystemExit as e:\n    rc = e.code or 0\n"
            "print('RSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, file=sys.stderr)\nsys.exit(rc)")
    mod, rest = args[0], args[1:]
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code.format(argv=[mod] + rest, mod=mod)], cwd=cwd, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{proc.stderr}")
    rss = float(proc.stderr.rsplit("RSS", 1)[1].split()[0])
    return wall, rss


def _browser(url: str, tmp: Path, extra: list[str]) -> tuple[float, str]:
    profile = tempfile.mkdtemp(dir=tmp)
    start = time.perf_counter()
    proc = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, url], capture_output=True, text=True,
                          timeout=300, cwd=tmp)
    return time.perf_counter() - start, proc.stdout


PROBE = """<script>(function(){var box=document.querySelector("div.items");var q=box.querySelector("input.q");
var t0=performance.now();q.value="wrong";q.dispatchEvent(new Event("input"));var t1=performance.now();
box.querySelector('th[data-col="4"]').click();var t2=performance.now();box.querySelector("button.next").click();
var t3=performance.now();document.title="PROBE "+(t1-t0).toFixed(1)+" "+(t2-t1).toFixed(1)+" "+(t3-t2).toFixed(1)+" "+
box.querySelector(".pageinfo").textContent;})();</script></body>"""


def _probe_page(page: Path, out: Path) -> Path:
    """A copy of the page that times the table script (benchmark only: the CSP would forbid the probe)."""
    html = page.read_text(encoding="utf-8")
    start = html.index('<meta http-equiv="Content-Security-Policy"')
    html = html[:start] + html[html.index(">", start) + 1:]
    out.write_text(html[: html.rindex("</body>")] + PROBE + "</html>\n", encoding="utf-8")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 100_000])
    parser.add_argument("--no-browser", action="store_true")
    add_arguments(parser)
    args = parser.parse_args()
    rec = Recorder.from_args("bench_report", args)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        empty = tmp / "empty.html"
        empty.write_text("<!DOCTYPE html><title>empty</title>", encoding="utf-8")
        base = None
        if CHROMIUM and not args.no_browser:
            base, _ = _browser(empty.as_uri(), tmp, [f"--screenshot={tmp / 'empty.png'}"])
            print(f"chromium, empty page to screenshot: {base:.2f} s (start-up cost included below)")
            rec.figure("chromium_empty_s", base, "s", "Chromium, an empty page to a screenshot (its own start-up)", digits=2)
        elif not args.no_browser:
            print("chromium not found: browser figures skipped (apt-get install chromium)")
            rec.remark("Chromium was not installed: no browser figures.")
        for n in args.sizes:
            work = tmp / f"n{n}"
            work.mkdir()
            dataset, rollouts = make_files(work, n)
            _child(["course.eval", "--dataset", str(dataset), "--completions", str(rollouts), "--outdir", "run"], work)
            wall, rss = _child(["course.report", "run"], work)
            page = work / "run" / "report.html"
            size = page.stat().st_size
            print(f"{n:>9,} items: course.report {wall:6.2f} s wall (child process, incl. start-up), peak RSS {rss:6.1f} MB, "
                  f"report.html {size / 1e6:7.2f} MB ({size / n:,.0f} bytes/item)")
            rec.figure(f"n{n}_write_s", wall, "s", f"{n:,} items: `python -m course.report` wall time (child process, start-up included)", digits=2)
            rec.figure(f"n{n}_peak_rss_mb", rss, "MB", f"{n:,} items: its peak memory", digits=1)
            rec.figure(f"n{n}_page_mb", size / 1e6, "MB", f"{n:,} items: size of report.html", digits=2)
            if base is not None:
                shot, _ = _browser(page.as_uri(), tmp, [f"--screenshot={work / 'shot.png'}"])
                dom_t, dom = _browser(page.as_uri(), tmp, ["--dump-dom"])
                ready = 'data-ready="1"' in dom
                print(f"{'':>9}         chromium load-to-screenshot {shot:6.2f} s ({shot - base:+.2f} s over an empty page); "
                      f"--dump-dom {dom_t:6.2f} s, table script ran: {'yes' if ready else 'NO'}")
                rec.figure(f"n{n}_chromium_s", shot, "s", f"{n:,} items: Chromium, load to screenshot", digits=2)
                _, probed = _browser(_probe_page(page, work / "probe.html").as_uri(), tmp, ["--dump-dom"])
                found = probed.split("<title>PROBE ", 1)[1].split("</title>", 1)[0].split(" ", 3) if "<title>PROBE " in probed else None
                if found:
                    print(f"{'':>9}         in the page: filter 'wrong' {found[0]} ms, sort by reason {found[1]} ms, "
                          f"next page {found[2]} ms ({found[3]})")
                    rec.figure(f"n{n}_filter_ms", float(found[0]), "ms", f"{n:,} items: in the page, filter every row for 'wrong'")
                    rec.figure(f"n{n}_sort_ms", float(found[1]), "ms", f"{n:,} items: in the page, sort by the reason column")
                else:
                    print(f"{'':>9}         in the page: the timing probe did not run")
    print("(one machine, one run each: read the ratios, not the absolute seconds)")
    rec.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
