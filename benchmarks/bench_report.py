"""Benchmark: how big is a ``course.report`` page, how long does it take to write, and to render in a browser?

    python benchmarks/bench_report.py                   # 100, 100,000 and 1,000,000 items
    python benchmarks/bench_report.py --sizes 100 10000 # quicker
    python benchmarks/bench_report.py --no-browser      # Python side only
    python benchmarks/bench_report.py --baseline none   # without the pre-#26 report beside it

For each size N it writes a synthetic dataset and rollouts (the generator of
``benchmarks/bench_eval.py``: a realistic mix of passes, slips and look-alike
characters) into a temporary directory, runs ``course.eval`` on them, and then
measures:

  * ``python -m course.report RUN`` in a fresh child process: wall time (reading
    results.jsonl + rendering + writing), peak RSS, and the size of report.html;
  * the reference, a *minimal* writer in a child process the same way: read
    results.jsonl line by line with ``json.loads`` and stream one HTML-escaped
    table row per item to a file (no checks, no page around it); and the same
    ``course.report`` of ``--baseline`` (a git revision, default the one before
    issue #26, unpacked with ``git archive``) on the same run directory. The three
    run in interleaved rounds (``--pairs``, default 2); medians of the per-round
    ratios to the minimal writer are printed (the target at 1,000,000 items:
    course.report within 1.5x of it, and its peak memory flat in N);
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
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_eval import make_files  # noqa: E402  (the same synthetic data as the eval benchmark)
from record import CHILD_PRELUDE, Recorder, add_arguments  # noqa: E402

TARGET_RATIO = 1.5  # course.report within 1.5x of the minimal writer's time at 1,000,000 items (issue #26)
BASELINE = "c47afda"  # the tree before issue #26: every item embedded in the page
MINIMAL_WRITER = r"""
import html, json, sys
esc = html.escape
with open(sys.argv[1], "rb") as f, open(sys.argv[2], "w", encoding="utf-8") as out:
    out.write("<!DOCTYPE html><meta charset=utf-8><table>\n")
    for line in f:
        r = json.loads(line)
        d = r["details"]
        cells = (r["id"], r.get("expected"), d.get("extracted"), d["error_code"], d.get("reason", ""),
                 r.get("completion"))
        out.write("<tr><td>" + "</td><td>".join(esc(str(c)) for c in cells) + "</td></tr>\n")
    out.write("</table>\n")
"""
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--virtual-time-budget=5000", "--window-size=1200,1600"]


def _child(args: list[str], cwd: Path, root: Path = ROOT) -> tuple[float, float]:
    """Run a Python child (``-m`` module, or ``-c`` code when ``args[0]`` is ``-c``) with ``root`` first on
    its path; return (wall seconds, peak RSS of the child in MB)."""
    if args[0] == "-c":
        code = CHILD_PRELUDE + (f"import resource, sys; sys.argv = ['-c'] + {args[2:]!r}\n{args[1]}\n"
                "print('RSS', peak_rss_kib() / 1024, file=sys.stderr)")
        return _run_child(code, cwd, root, args)
    code = CHILD_PRELUDE + ("import resource, runpy, sys; sys.argv = {argv!r}; "
            "rc = 0\ntry:\n    runpy.run_module({mod!r}, run_name='__main__')\n"
            "except SystemExit as e:\n    rc = e.code or 0\n"
            "print('RSS', peak_rss_kib() / 1024, file=sys.stderr)\nsys.exit(rc)")
    mod, rest = args[0], args[1:]
    return _run_child(code.format(argv=[mod] + rest, mod=mod), cwd, root, args)


def _run_child(code: str, cwd: Path, root: Path, args: list[str]) -> tuple[float, float]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(root)})
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


def _unpack(rev: str, into: Path) -> Path | None:
    """The course package as it was at git revision ``rev`` (``git archive``), or None if git cannot give it."""
    into.mkdir()
    try:
        archive = subprocess.run(["git", "archive", rev, "course"], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    except (OSError, subprocess.CalledProcessError):
        print(f"git could not give revision {rev}: no baseline figures")
        return None
    return into


def _probe_page(page: Path, out: Path) -> Path:
    """A copy of the page that times the table script (benchmark only: the CSP would forbid the probe)."""
    html = page.read_text(encoding="utf-8")
    start = html.index('<meta http-equiv="Content-Security-Policy"')
    html = html[:start] + html[html.index(">", start) + 1:]
    out.write_text(html[: html.rindex("</body>")] + PROBE + "</html>\n", encoding="utf-8")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 100_000, 1_000_000])
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--pairs", type=int, default=2,
                        help="interleaved rounds of report / baseline / minimal writer (default 2)")
    parser.add_argument("--baseline", default=BASELINE,
                        help=f"git revision of the report to compare with, or 'none' (default {BASELINE})")
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
            rec.figure("chromium_empty_s", base, "s",
                       "Chromium, an empty page to a screenshot (its own start-up)", digits=2)
        elif not args.no_browser:
            print("chromium not found: browser figures skipped (apt-get install chromium)")
            rec.remark("Chromium was not installed: no browser figures.")
        old = _unpack(args.baseline, tmp / "baseline") if args.baseline != "none" else None
        for n in args.sizes:
            work = tmp / f"n{n}"
            work.mkdir()
            dataset, rollouts = make_files(work, n)
            _child(["course.eval", "--dataset", str(dataset), "--completions", str(rollouts), "--outdir", "run"], work)
            results = str(work / "run" / "results.jsonl")
            rounds: dict[str, list[tuple[float, float]]] = {"report": [], "baseline": [], "minimal": []}
            for k in range(args.pairs):
                sides = ["report", "baseline", "minimal"] if old is not None else ["report", "minimal"]
                for side in (sides if k % 2 == 0 else sides[::-1]):  # interleaved: neither side always first
                    if side == "report":
                        rounds[side].append(_child(["course.report", "run"], work))
                    elif side == "baseline":
                        rounds[side].append(_child(["course.report", "run", "--out", str(work / "baseline.html")],
                                                   work, root=old))
                    else:
                        rounds[side].append(_child(["-c", MINIMAL_WRITER, results, str(work / "minimal.html")], work))
            wall, rss = (statistics.median(x[i] for x in rounds["report"]) for i in (0, 1))
            page = work / "run" / "report.html"
            size = page.stat().st_size
            print(f"{n:>9,} items: course.report {wall:6.2f} s wall (child process, incl. start-up), "
                  f"peak RSS {rss:6.1f} MB, "
                  f"report.html {size / 1e6:7.2f} MB ({size / n:,.0f} bytes/item)")
            m_wall, m_rss = (statistics.median(x[i] for x in rounds["minimal"]) for i in (0, 1))
            ratio = statistics.median(r[0] / m[0] for r, m in zip(rounds["report"], rounds["minimal"]))
            print(f"{'':>9}         minimal escaped-table writer {m_wall:6.2f} s, peak RSS {m_rss:6.1f} MB, "
                  f"{(work / 'minimal.html').stat().st_size / 1e6:.1f} MB: course.report / minimal {ratio:.2f}x "
                  f"(median of {args.pairs} interleaved rounds)"
                  + (f"; target at 1,000,000 items <= {TARGET_RATIO}x: "
                     f"{'met' if ratio <= TARGET_RATIO else 'NOT met'}" if n == 1_000_000 else ""))
            rec.figure(f"n{n}_minimal_writer_s", m_wall, "s",
                       f"{n:,} items: the minimal escaped-table writer, wall time", digits=2)
            rec.figure(f"n{n}_report_over_minimal", ratio, "×",
                       f"{n:,} items: `course.report` / the minimal writer (wall)", digits=2)
            if old is not None:
                b_wall, b_rss = (statistics.median(x[i] for x in rounds["baseline"]) for i in (0, 1))
                b_ratio = statistics.median(b[0] / m[0] for b, m in zip(rounds["baseline"], rounds["minimal"]))
                print(f"{'':>9}         course.report at {args.baseline} (before #26): {b_wall:6.2f} s, "
                      f"peak RSS {b_rss:6.1f} MB, "
                      f"{(work / 'baseline.html').stat().st_size / 1e6:.1f} MB page: {b_ratio:.2f}x the minimal writer")
                rec.figure(f"n{n}_baseline_s", b_wall, "s",
                           f"{n:,} items: `course.report` before #26 ({args.baseline}), wall time", digits=2)
                rec.figure(f"n{n}_baseline_peak_rss_mb", b_rss, "MB",
                           f"{n:,} items: `course.report` before #26, peak memory", digits=1)
            rec.figure(f"n{n}_write_s", wall, "s",
                       f"{n:,} items: `python -m course.report` wall time (child process, start-up included)", digits=2)
            rec.figure(f"n{n}_peak_rss_mb", rss, "MB", f"{n:,} items: its peak memory", digits=1)
            rec.figure(f"n{n}_page_mb", size / 1e6, "MB", f"{n:,} items: size of report.html", digits=2)
            if base is not None:
                shot, _ = _browser(page.as_uri(), tmp, [f"--screenshot={work / 'shot.png'}"])
                dom_t, dom = _browser(page.as_uri(), tmp, ["--dump-dom"])
                ready = 'data-ready="1"' in dom
                print(f"{'':>9}         chromium load-to-screenshot {shot:6.2f} s "
                      f"({shot - base:+.2f} s over an empty page); "
                      f"--dump-dom {dom_t:6.2f} s, table script ran: {'yes' if ready else 'NO'}")
                rec.figure(f"n{n}_chromium_s", shot, "s", f"{n:,} items: Chromium, load to screenshot", digits=2)
                _, probed = _browser(_probe_page(page, work / "probe.html").as_uri(), tmp, ["--dump-dom"])
                found = (probed.split("<title>PROBE ", 1)[1].split("</title>", 1)[0].split(" ", 3)
                         if "<title>PROBE " in probed else None)
                if found:
                    print(f"{'':>9}         in the page: filter 'wrong' {found[0]} ms, sort by reason {found[1]} ms, "
                          f"next page {found[2]} ms ({found[3]})")
                    rec.figure(f"n{n}_filter_ms", float(found[0]), "ms",
                               f"{n:,} items: in the page, filter every row for 'wrong'")
                    rec.figure(f"n{n}_sort_ms", float(found[1]), "ms",
                               f"{n:,} items: in the page, sort by the reason column")
                else:
                    print(f"{'':>9}         in the page: the timing probe did not run")
    print("(one machine, one run each: read the ratios, not the absolute seconds)")
    rec.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
