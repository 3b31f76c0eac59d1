"""Regenerate tests/data/palinode_plans.json: the palinode resolver's plan for
every request of the demo store (lexical, fixed clock), as the resolver made
them at main 0e5659a, before the thorough resolver existed. Run with the
PYTHONPATH of the code whose plans are to be recorded:

    PYTHONPATH=<checkout>/core python tests/data/make_palinode_plans.py OUT.json
"""
from __future__ import annotations

import json
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from palinode_core.demo import build_demo_store
from palinode_core.forget import resolve
from palinode_core.forget.requests import find_requests
from palinode_core.search.index import SearchIndex
from palinode_core.storage.store import Store

DROP = ("found_by", "preapproved", "evidence", "resolver", "resolver_notice")  # fields added since


def plans(root: Path) -> dict:
    store = Store(root, clock=lambda: datetime(2025, 6, 1, 11, 0, tzinfo=timezone.utc),
                  cache_dir=root.parent / "cache")
    scan = store.scan()
    index = SearchIndex(store)
    index.update_lexical(memories=scan.memories)
    out = {}
    for req in find_requests(scan.memories):
        data = resolve.plan_forget(store, index, req.path, scan.memories, lexical=True).to_dict()
        for key in DROP:
            data.pop(key, None)
        for cand in data["candidates"]:
            for key in DROP:
                cand.pop(key, None)
        out[req.path] = data
    return out


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "demo"
        build_demo_store(root)
        Path(sys.argv[1]).write_text(json.dumps(plans(root), indent=1, sort_keys=True) + "\n", encoding="utf-8")
