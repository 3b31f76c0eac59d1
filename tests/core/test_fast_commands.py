"""Headless commands stay light: a plan on an indexed store reads cached
vectors (no model, no torch), and read-only commands import no search or git
library. Each command runs in a real subprocess so ``sys.modules`` is its own."""
from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

import pytest
from helpers import ROOT, make_git_store, palinode_file
from palinode_core.session import Session
from palinode_core.storage import gitstore

FILES = {
    "people/wilhelmina-fair.md": "Met Wilhelmina Cragg at the fair; she judges the Moonrise panel.",
    "insights/pref-tea.md": "I drink oolong tea every morning before work.",
    "insights/pref-sneakers.md": "I collect vintage sneakers and track new sneaker drops every week.",
    "insights/forget-w.md": "Please forget that I know Wilhelmina Cragg.",
}
HEAVY = ("whoosh", "numpy", "onnxruntime", "tokenizers", "torch", "sentence_transformers", "transformers", "git")
MODEL = {"onnxruntime", "tokenizers", "torch", "sentence_transformers", "transformers"}  # what embedding may import
LOADING = "loading the embedding model"

# Runs the CLI in this process, then reports which heavy modules it imported.
_PROBE = """
import json, runpy, sys
sys.argv = ["palinode-audit", *json.loads(sys.argv[1])]
code = 0
try:
    runpy.run_module("palinode_core", run_name="__main__")
except SystemExit as exc:
    code = exc.code
print("\\nPROBE " + json.dumps({"code": code, "modules": [m for m in HEAVY if m in sys.modules]}), file=sys.stderr)
""".replace("HEAVY", repr(HEAVY))


def run_cli(*args: str) -> tuple[dict, list[str], str]:
    """(the JSON result, heavy modules imported, stderr without the probe line)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "core"), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(["--json", *args])], capture_output=True,
                          text=True, env=env, timeout=600, check=False)
    err, _, probe = proc.stderr.rpartition("\nPROBE ")
    assert probe.startswith("{"), proc.stderr[-3000:]
    report = json.loads(probe)
    assert report["code"] in (0, None), proc.stderr
    return json.loads(proc.stdout), report["modules"], err


def _routes(plan: dict) -> list[tuple]:
    return [(c["path"], c["rank"], c["arms"], c["route"], c["coverage"]) for c in plan["candidates"]]


@pytest.fixture
def store(tmp_path):
    files = {rel: palinode_file({"id": rel.replace("/", "-")[:-3], "category": rel.split("/")[0],
                                 "created_at": f"2025-05-2{i}T10:00:00+00:00"}, body)
             for i, (rel, body) in enumerate(FILES.items())}
    return make_git_store(tmp_path / "store", files)


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_warm_plan_reads_cached_vectors_and_never_loads_the_model(store, embedder):
    # index in-process with the session's model; the subprocess shares the XDG cache
    session = Session.open(store, embedder=embedder)
    index = session.update_index()
    assert index.vectors_ready
    expected = session.plan("insights/forget-w.md").to_dict()

    result, modules, err = run_cli("plan", str(store), "insights/forget-w.md")
    assert result["search_mode"] == "hybrid"
    # the cached preference vector ranks the same (plans differ only in their history lines' minute)
    assert _routes(result) == _routes(expected) and _routes(result)
    assert not MODEL & set(modules), modules
    # Palinode's resolver on a small store computes similarities in plain Python (index.NUMPY_ABOVE)
    _, palinode_modules, _ = run_cli("plan", str(store), "insights/forget-w.md", "--resolver", "palinode")
    assert "numpy" not in palinode_modules
    assert LOADING not in err
    # apply (shown, not written, without --yes) and residue read the same cache
    for args in (["apply", str(store), "insights/forget-w.md"],
                 ["residue", str(store), "--pref", "I know Wilhelmina Cragg"]):
        shown, modules, err = run_cli(*args)
        assert not MODEL & set(modules), (args, modules)
        assert LOADING not in err
    assert shown["counts"]


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_vector_cache_api_embeds_only_what_is_missing(store, embedder):
    index = Session.open(store, embedder=embedder).update_index()
    pref, fresh = "I know Wilhelmina Cragg", "a sentence no memory holds about lighthouses"
    vectors, missing = index.vectors_for([pref, fresh])
    assert missing == [1] and not vectors[1].any() and vectors[0].any()
    before = embedder.encoded
    assert index.embed_missing([pref, fresh, fresh]) == 1
    assert embedder.encoded - before == 1
    vectors, missing = index.vectors_for([fresh, pref])
    assert missing == []
    assert abs(float(vectors[0] @ embedder.encode([fresh])[0]) - 1.0) < 1e-5
    # a damaged row (wrong size) counts as missing, never as a vector
    index._db.execute("UPDATE vectors SET vec = x'00'")
    assert index.vectors_for([pref])[1] == [0]


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_a_typed_query_never_embedded_loads_the_model_and_says_so(store, embedder):
    Session.open(store, embedder=embedder).update_index()
    query = "judges at the autumn fair"
    result, modules, err = run_cli("search", str(store), query)
    assert result["mode"] == "hybrid" and result["hits"]
    assert "onnxruntime" in modules and not {"torch", "sentence_transformers", "transformers"} & set(modules)
    assert [line for line in err.splitlines() if LOADING in line] == [err.strip()]  # one line, nothing else

    again, modules, err = run_cli("search", str(store), query)  # now cached by its text
    assert again["hits"] == result["hits"]
    assert not MODEL & set(modules) and LOADING not in err


# trace and history read `git log`: they may import GitPython only while GitStore runs git through it
_GIT_LOG_USES_GITPYTHON = "import git\n" in inspect.getsource(gitstore)


@pytest.mark.parametrize("command", ["scan", "requests", "integrity", "trace", "history"])
def test_read_only_commands_import_no_search_or_git_library(store, command):
    args = {"trace": ["insights/forget-w.md"], "history": ["insights/pref-tea.md"]}.get(command, [])
    result, modules, _ = run_cli(command, str(store), *args)
    assert result
    allowed = {"git"} if command in ("trace", "history") and _GIT_LOG_USES_GITPYTHON else set()
    assert set(modules) <= allowed, modules


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_plain_python_and_numpy_similarities_rank_alike(store, embedder, monkeypatch):
    from palinode_core.search import index as search_index
    index = Session.open(store, embedder=embedder).update_index()
    queries = ["I know Wilhelmina Cragg", "oolong tea in the morning", "sneaker drops"]
    plain = [index.search(q).hits for q in queries]
    monkeypatch.setattr(search_index, "NUMPY_ABOVE", 0)  # a big store's path
    index._matrix = None
    assert [index.search(q).hits for q in queries] == plain
    assert not isinstance(index._matrix, list)  # the numpy path really ran


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_a_saved_plans_apply_checks_the_residue_without_numpy(store, embedder, tmp_path, monkeypatch):
    from palinode_core.search import rank
    request = "insights/forget-w.md"
    Session.open(store, embedder=embedder).update_index()
    out = tmp_path / "w.plan.json"
    run_cli("plan", str(store), request, "--out", str(out))
    done, modules, err = run_cli("apply", str(store), "--plan", str(out), "--yes")
    assert done["applied"] and done["commits"]
    assert "numpy" not in modules and LOADING not in err  # cached similarities, compared in plain Python
    ledger = [json.loads(line) for line in (store / ".palinode-audit" / "ledger.jsonl").read_text().splitlines()]
    residue = [r for r in ledger if r["action"] == "residue" and r["request"] == request][-1]
    # the same leak check as a session that compares every vector with numpy
    monkeypatch.setattr(rank, "PYTHON_PRODUCTS", 0)
    session = Session.open(store, embedder=embedder)
    session.search_index()
    leaks = session.leak_check(request)
    assert residue["mentions"] == [leak.to_dict() for leak in leaks] and residue["mentions"]


def test_similarities_agree_in_plain_python_and_numpy(monkeypatch):
    import random
    from array import array

    from palinode_core.search import rank

    rng = random.Random(7)

    def unit() -> bytes:
        v = [rng.gauss(0, 1) for _ in range(384)]
        norm = sum(x * x for x in v) ** 0.5
        return array("f", [x / norm for x in v]).tobytes()

    rows, queries = [unit() for _ in range(40)], [unit() for _ in range(3)]
    plain = rank.similarities(rows, queries)
    monkeypatch.setattr(rank, "PYTHON_PRODUCTS", 0)
    fast = rank.similarities(rows, queries)
    assert len(plain) == len(fast) == 40 and all(len(r) == 3 for r in plain)
    assert all(abs(a - b) < 1e-5 for pr, fr in zip(plain, fast) for a, b in zip(pr, fr))
    assert rank.similarities([], queries) == [] and rank.similarities(rows[:2], []) == [[], []]
    assert abs(rank.similarities([rows[0]], [rows[0]])[0][0] - 1.0) < 1e-5
    for short in (rows[1][:-4], rows[1] + rows[1][:4]):  # a damaged row is refused, never truncated
        with pytest.raises(ValueError):
            rank.similarities([rows[0], short], queries)
