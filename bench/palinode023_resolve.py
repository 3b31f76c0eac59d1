"""Runs INSIDE the palinode==0.23.0 virtualenv (never imports this repository):
the baseline for ``bench/fast_commands.py``.

    python palinode023_resolve.py index STORE            # its FTS index of every memory (once)
    python palinode023_resolve.py resolve STORE REQUEST  # resolve the request's pref, FTS only

``resolve`` is one whole process doing what Palinode 0.23 does to resolve a
forget request in its lexical retrieval mode: detect the request's pref, search
it (keyword arm only: no embedding server) and walk the hits through
``resolve_forget_targets``'s guards. It prints the target paths as JSON.
"""
from __future__ import annotations

import json
import logging
import os
import sys

_stdout = sys.stdout
sys.stdout = sys.stderr  # the package may print at import
command, root = sys.argv[1], os.path.realpath(sys.argv[2])
os.environ["PALINODE_DIR"] = root
os.environ["PALINODE_RETRIEVAL_MODE"] = "lexical"
os.environ["PALINODE_ALLOW_FRESH_DB"] = "1"  # the index command creates it
logging.disable(logging.CRITICAL)

from palinode.core import store
from palinode.core.config import config

config.memory_dir = root
config.db_path = os.path.join(root, ".palinode.db")

if command == "index":
    from palinode.indexer.index_file import index_file
    store.init_db()
    done = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.endswith(".md"):
                index_file(os.path.join(folder, name), defer_embed=True)  # FTS-only rows
                done += 1
    _stdout.write(json.dumps({"indexed": done}) + "\n")
elif command == "resolve":
    from palinode.consolidation.forget import (
        detect_forget_request,
        resolve_forget_targets,
    )
    request = os.path.join(root, sys.argv[3])
    with open(request, encoding="utf-8") as fh:
        pref = detect_forget_request(fh.read())
    hits = store.search_hybrid(pref, None, top_k=config.consolidation.forget.search_k, threshold=0.0,
                               record_access=False, vector_relative_floor=0.0)
    targets = resolve_forget_targets(pref, exclude_paths={request}, hits=hits)
    _stdout.write(json.dumps({"pref": pref, "hits": len(hits),
                              "targets": [os.path.relpath(t["file_path"], root) for t in targets]}) + "\n")
else:
    raise SystemExit(f"unknown command {command!r}")
