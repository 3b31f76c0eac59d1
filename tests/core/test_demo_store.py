"""The demo store: deterministic, real dated history, every scenario routes as promised."""
from __future__ import annotations

import pytest

from helpers import git
from palinode_core.session import Session
from palinode_core.demo import build_demo_store
from palinode_core.search.index import SearchIndex
from palinode_core.storage.store import Store


def test_same_seed_same_bytes(tmp_path):
    build_demo_store(tmp_path / "a", size=40, seed=3)
    build_demo_store(tmp_path / "b", size=40, seed=3)
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.md"))
    assert files_a == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*.md"))
    for rel in files_a:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes()
    lengths = [len(Store(tmp_path / "a").load(str(r)).body.split()) for r in files_a if "gen-" in str(r)]
    assert len(lengths) == 40 and min(lengths) >= 40 and max(lengths) <= 2300


def test_history_is_dated_across_weeks_and_states_are_set(tmp_path):
    counts = build_demo_store(tmp_path / "d")
    assert counts["errors"] == 0
    dates = sorted(set(git(tmp_path / "d", "log", "--format=%ad", "--date=short").split()))
    assert len(dates) >= 15 and dates[0] < "2025-04-05" and dates[-1] > "2025-05-10"
    store = Store(tmp_path / "d")
    states = {s.path: s.state for s in Session(store).request_states()}
    assert states["insights/forget-poker.md"] == "applied"
    assert states["insights/forget-gym.md"] == "withdrawn"
    assert [s for p, s in states.items() if s == "pending"] == ["pending"] * 5
    assert store.load("projects/weekly-plan.md").struck
    chain = Session(store).trace("decisions/db-choice-v1.md").to_dict()["chain_forward"]
    assert chain == ["decisions/db-choice-v2.md", "decisions/db-choice-v3.md", "decisions/db-choice-v4.md"]
    assert Session(store).integrity() == []
    with pytest.raises(FileExistsError):
        build_demo_store(tmp_path / "d")


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_every_pending_request_routes_as_designed(tmp_path, embedder):
    build_demo_store(tmp_path / "d")
    store = Store(tmp_path / "d")
    index = SearchIndex(store, embedder, cache_dir=tmp_path / "cache")
    index.update()

    def routes(request: str) -> dict[str, str]:
        return {c.path: c.route for c in Session(store, resolver="palinode").plan(request, index=index).targets}

    assert routes("insights/forget-sneakers.md") == {"insights/pref-sneakers.md": "archive"}
    assert routes("insights/forget-w.md") == {"people/wilhelmina-fair.md": "archive",
                                              "projects/moonrise-closeout.md": "strike"}
    tea = Session(store, resolver="palinode").plan("insights/forget-tea.md", index=index)
    assert {c.path: c.route for c in tea.targets} == {"insights/pref-tea.md": "archive",
                                                       "projects/tea-club-status.md": "unforgotten"}
    assert "replace_doc" in tea.candidate("projects/tea-club-status.md").reason
    ott = Session(store, resolver="palinode").plan("insights/forget-ottoline.md", index=index)
    board = ott.candidate("projects/harbor-board.md")
    assert board.route == "unforgotten"
    assert sorted(r.kind for r in board.plan.regions) == ["fence", "heading", "table"]
    berlin = Session(store, resolver="palinode").plan("insights/forget-berlin.md", index=index).candidate("people/me-profile.md")
    assert berlin.route == "strike"
    assert berlin.plan.spans[0].collateral == "work at Stripe"


def test_the_demo_history_is_in_date_order_so_as_of_shows_only_what_was_filed_by_then(tmp_path):
    """Issue 41: every save and operation of the demo is committed in date order; as of 2025-05-13 the
    requests are the two filed by then (the others were filed from 05-15 on)."""
    import json
    import subprocess
    import sys

    from palinode_core.demo import build_demo_store

    root = tmp_path / "demo"
    build_demo_store(root)
    dates = subprocess.run(["git", "-C", str(root), "log", "--format=%cI"], capture_output=True, text=True,
                           check=True).stdout.split()
    assert dates == sorted(dates, reverse=True)
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "--json", "requests", str(root), "--as-of",
                           "2025-05-13"], capture_output=True, text=True, check=True)
    assert sorted(r["path"] for r in json.loads(proc.stdout)["requests"]) == [
        "insights/forget-gym.md", "insights/forget-poker.md"]
