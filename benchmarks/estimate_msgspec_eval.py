"""Scratch estimate (issue #11, not part of the course): how fast could course.eval's hot loop be on msgspec?

    python benchmarks/estimate_msgspec_eval.py 200000 3   # N lines, repeats (needs msgspec installed)

Times three loops in one process, interleaved, in CPU time: the minimal loop of
bench_eval.py (stdlib json), course.eval's streaming loop as it is (iter_aligned on
stdlib json, every check), and the same loop on msgspec typed Structs. The msgspec
loop is the HAPPY PATH ONLY: it keeps the duplicate-id, one-policy and id-alignment
checks but not the BOM/surrogate/depth refusals nor any error message, so it is an
upper bound on what a msgspec reader would gain, not a reader. It checks that it
writes the same results.jsonl bytes.
"""
import filecmp
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from typing import Annotated, Any

import msgspec
from bench_eval import make_files

from course.instrument.spec_v1 import score
from course.lib.evaluation.summary import Tally
from course.lib.records.formats import UniqueIds, iter_aligned
from course.lib.records.jsonl import JsonlWriter, dumps_line

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
REPEATS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
TMP = Path(tempfile.mkdtemp(prefix="estimate_msgspec_"))
ds, cs = make_files(TMP, N)  # a script, not a module: it runs on import
Id = Annotated[str, msgspec.Meta(min_length=1)]
class Example(msgspec.Struct):
    id: Id
    prompt: str
    expected_answer: int
class Rollout(msgspec.Struct):
    id: Id
    completion: str | None
    policy: Id
    sampling: dict[str, Any]
dec_e, dec_r = msgspec.json.Decoder(Example).decode, msgspec.json.Decoder(Rollout).decode
def minimal():
    with open(cs, "rb") as f, open(TMP / "min.jsonl", "w", encoding="utf-8") as out:
        for raw in f:
            r = json.loads(raw)
            ident, text = r["id"], r["completion"]
            s = score({"expected_answer": 5}, text)
            out.write(dumps_line({"id": ident, "completion": text, "expected": 5, "reward": s["reward"],
                                  "details": s["details"]}) + "\n")
def stdlib_eval():
    tally = Tally()
    with JsonlWriter(TMP / "full.jsonl") as out:
        write, add = out.write, tally.add
        for example, record in iter_aligned(ds, cs):
            text = record["completion"]
            scored = score(example, text)
            result = {"id": example["id"], "completion": text, "expected": example["expected_answer"],
                      "reward": scored["reward"], "details": scored["details"]}
            write(result)
            add(result)
        out.sha256
def msgspec_eval():
    tally = Tally()
    ids = UniqueIds(ds)
    policy = sampling = None
    with open(ds, "rb") as fd, open(cs, "rb") as fc, JsonlWriter(TMP / "ms.jsonl") as out:
        write, add = out.write, tally.add
        lineno = 0
        for raw_e, raw_r in zip(fd, fc):
            lineno += 1
            if 13 in raw_e or 13 in raw_r:
                raise ValueError
            e = dec_e(raw_e)
            r = dec_r(raw_r)
            ids.add(e.id, lineno)
            if policy is None:
                policy, sampling = r.policy, r.sampling
            elif r.policy != policy or r.sampling != sampling or type(r.sampling["seed"]) is bool:
                raise ValueError
            if r.id != e.id:
                raise ValueError
            text = r.completion
            scored = score({"id": e.id, "prompt": e.prompt, "expected_answer": e.expected_answer}, text)
            result = {"id": e.id, "completion": text, "expected": e.expected_answer, "reward": scored["reward"],
                      "details": scored["details"]}
            write(result)
            add(result)
        out.sha256
res = {f.__name__: [] for f in (minimal, stdlib_eval, msgspec_eval)}
for rep in range(REPEATS):
    for f in (minimal, stdlib_eval, msgspec_eval):
        t0 = time.process_time()
        f()
        res[f.__name__].append(time.process_time() - t0)

m = res["minimal"]
for k, v in res.items():
    ratios = [x / y for x, y in zip(v, m)]
    print(f"{k:14s} median {statistics.median(v)*1e6/N:6.3f} us/line  ratio to minimal median "
          f"{statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")
print("same results.jsonl bytes:", filecmp.cmp(TMP / "full.jsonl", TMP / "ms.jsonl", shallow=False))
shutil.rmtree(TMP)
