"""all-MiniLM-L6-v2 as ONNX Runtime runs it, without torch.

The graph ships with palinode-core (``minilm.onnx``, written by
``tools/minilm_graph.py``): BERT's six layers, mean pooling and L2
normalisation, exactly as sentence-transformers computes them, with no weights
in it. Its tensors refer to ``weights.bin`` beside it: the packaged
``model.safetensors`` tensors, copied once and unchanged into the user's cache
(``model_cache()``), each starting on a 64 KiB boundary so
ONNX Runtime maps the file instead of reading it (a sentence touches a few rows
of the 47 MB word table). The safetensors header is checked against the
architecture first: another model's file is refused, never run.

Only the standard library here; ``Embedder`` imports ONNX Runtime."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import struct
import tempfile
from pathlib import Path

from ..errors import PalinodeError

NAME = "all-MiniLM-L6-v2"
HIDDEN, LAYERS, HEADS, INTERMEDIATE = 384, 6, 12, 1536
VOCAB, POSITIONS, EPS = 30522, 512, 1e-12
CACHE_ENV = "PALINODE_AUDIT_MODEL_CACHE"  # another folder for the copy (the tests share one per session)
ALIGN = 65536  # the largest mapping granularity ONNX Runtime needs (Windows); Linux needs 4 KiB
GRAPH = Path(__file__).with_name("minilm.onnx")
WEIGHTS = "weights.bin"  # the graph's external data location, relative to the graph file
_HEADER_MAX = 1 << 20  # the real header is 11 KB; a larger one is not this model


def tensors() -> list[tuple[str, tuple[int, ...]]]:
    """The float32 tensors the graph uses, by their safetensors names, in file order."""
    out: list[tuple[str, tuple[int, ...]]] = [
        ("embeddings.word_embeddings.weight", (VOCAB, HIDDEN)),
        ("embeddings.token_type_embeddings.weight", (2, HIDDEN)),
        ("embeddings.position_embeddings.weight", (POSITIONS, HIDDEN)),
        ("embeddings.LayerNorm.weight", (HIDDEN,)),
        ("embeddings.LayerNorm.bias", (HIDDEN,)),
    ]
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        linear = [
            ("attention.self.query", HIDDEN, HIDDEN),
            ("attention.self.key", HIDDEN, HIDDEN),
            ("attention.self.value", HIDDEN, HIDDEN),
            ("attention.output.dense", HIDDEN, HIDDEN),
            ("intermediate.dense", INTERMEDIATE, HIDDEN),
            ("output.dense", HIDDEN, INTERMEDIATE),
        ]
        for module, rows, cols in linear:  # torch's Linear: weight is (out, in)
            out += [(f"{p}{module}.weight", (rows, cols)), (f"{p}{module}.bias", (rows,))]
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            out += [(f"{p}{norm}.weight", (HIDDEN,)), (f"{p}{norm}.bias", (HIDDEN,))]
    return out


def layout() -> list[tuple[str, tuple[int, ...], int, int]]:
    """(name, shape, offset, length) of each tensor in ``weights.bin``."""
    placed, offset = [], 0
    for name, shape in tensors():
        length = 4
        for dim in shape:
            length *= dim
        offset = -(-offset // ALIGN) * ALIGN
        placed.append((name, shape, offset, length))
        offset += length
    return placed


def weights_size() -> int:
    _, _, offset, length = layout()[-1]
    return offset + length


def read_header(source: Path) -> tuple[bytes, dict[str, tuple[int, int]]]:
    """The safetensors header's bytes and each needed tensor's (start, end) in
    the file, after checking names, dtypes, shapes and bounds against the
    architecture."""
    size = source.stat().st_size
    with open(source, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise PalinodeError(f"{source} is not a safetensors file")
        (length,) = struct.unpack("<Q", head)
        if not 2 <= length <= min(_HEADER_MAX, size - 8):
            raise PalinodeError(f"{source} is not a safetensors file (header of {length} bytes)")
        raw = f.read(length)
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise PalinodeError(f"{source} is not a safetensors file ({exc})") from None
    if not isinstance(header, dict):
        raise PalinodeError(f"{source} is not a safetensors file")
    spans: dict[str, tuple[int, int]] = {}
    for name, shape, _, nbytes in layout():
        meta = header.get(name)
        offsets = meta.get("data_offsets") if isinstance(meta, dict) else None
        if (
            not isinstance(meta, dict)
            or meta.get("dtype") != "F32"
            or meta.get("shape") != list(shape)
            or not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(type(o) is int for o in offsets)
        ):
            raise PalinodeError(f"{source} is not {NAME}: tensor {name} is missing or not float32 {list(shape)}")
        start, end = 8 + length + offsets[0], 8 + length + offsets[1]
        if end - start != nbytes or start < 8 + length or end > size:
            raise PalinodeError(f"{source} is not {NAME}: tensor {name} lies outside the file")
        spans[name] = (start, end)
    return raw, spans


def model_cache() -> Path:
    """Where the weights copy is kept: $PALINODE_AUDIT_MODEL_CACHE when it is an
    absolute path, else the ``model`` folder of the user's cache."""
    given = os.environ.get(CACHE_ENV) or ""
    if os.path.isabs(given):
        return Path(given)
    from ..storage.cache import cache_root

    return cache_root() / "model"


def prepared(model_dir: Path, cache: Path) -> Path:
    """The graph file ONNX Runtime loads, with its weights beside it: made in
    ``cache`` on first use (about 0.2 s), found there afterwards. Raises
    ``PalinodeError`` when the model files are not this model, ``OSError`` when
    the cache cannot be written."""
    source = model_dir / "model.safetensors"
    raw, spans = read_header(source)
    graph = GRAPH.read_bytes()
    target = cache / _key(source, raw, graph)
    if not _complete(target, graph):
        cache.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".building-", dir=cache))
        try:
            _write(source, spans, work)
            (work / GRAPH.name).write_bytes(graph)
            (work / "source.json").write_text(json.dumps({"path": str(source.resolve()), "key": target.name}))
            try:
                os.rename(work, target)
            except OSError:  # taken: by another process's whole copy (kept) or a damaged one (replaced)
                if not _complete(target, graph):
                    _remove(target)
                    os.rename(work, target)
        finally:
            if work.exists():
                _remove(work)
        _drop_stale(cache, target)
    return target / GRAPH.name


def _complete(target: Path, graph: bytes) -> bool:
    try:
        weights = os.lstat(target / WEIGHTS)
        return (
            stat.S_ISDIR(os.lstat(target).st_mode)
            and stat.S_ISREG(weights.st_mode)
            and weights.st_size == weights_size()
            and stat.S_ISREG(os.lstat(target / GRAPH.name).st_mode)
            and (target / GRAPH.name).read_bytes() == graph
        )
    except OSError:
        return False


def _write(source: Path, spans: dict[str, tuple[int, int]], work: Path) -> None:
    chunk = 1 << 20  # copied a MiB at a time: the 90 MB never sits in memory
    with open(source, "rb") as src, open(work / WEIGHTS, "wb") as dst:
        for name, _, offset, _ in layout():
            start, end = spans[name]
            src.seek(start)
            dst.seek(offset)
            while start < end:
                data = src.read(min(chunk, end - start))
                if not data:
                    raise PalinodeError(f"{source} ended early")
                dst.write(data)
                start += len(data)
        dst.truncate(weights_size())


def _drop_stale(cache: Path, keep: Path) -> None:
    """Remove copies made from a model file that is gone or has changed (a
    reinstalled package): 90 MB each, nothing else would ever remove them."""
    for other in cache.glob(f"{NAME}-*"):
        if other == keep or other.is_symlink() or not other.is_dir():
            continue
        try:
            made = json.loads((other / "source.json").read_text())
            source = Path(made["path"])
            stale = not source.is_file() or _key(source, read_header(source)[0], GRAPH.read_bytes()) != made["key"]
        except (OSError, ValueError, KeyError, TypeError, PalinodeError):
            stale = True
        if stale:
            _remove(other)


def _key(source: Path, raw: bytes, graph: bytes) -> str:
    """The copy's folder name: the graph, the header and the file's size and
    modification time (a reinstalled or edited model file gets a new copy)."""
    st = source.stat()
    key = hashlib.sha256(b"\0".join([graph, raw, str(st.st_size).encode(), str(st.st_mtime_ns).encode()]))
    return f"{NAME}-{key.hexdigest()[:16]}"


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)
