"""SVG snapshots of every screen on the demo store, time frozen: at 120x36,
and at 80x24, the smallest terminal every pane, knob and key must fit."""
from __future__ import annotations

import pytest

from palinode_core.demo import build_demo_store
from scenes import SCENES, SIZE, SMALL, demo_app

pytestmark = [pytest.mark.model, pytest.mark.xdist_group("model")]


@pytest.fixture(scope="module")
def demo_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("snap") / "palinode-demo"
    build_demo_store(root)
    return root


@pytest.mark.parametrize("scene", list(SCENES))
def test_screen_snapshot(scene, snap_compare, demo_root, embedder, tmp_path):
    app = demo_app(demo_root, embedder, tmp_path / "cache")
    assert snap_compare(app, terminal_size=SIZE, run_before=SCENES[scene])


@pytest.mark.parametrize("scene", list(SCENES))
def test_screen_snapshot_80x24(scene, snap_compare, demo_root, embedder, tmp_path):
    app = demo_app(demo_root, embedder, tmp_path / "cache")
    assert snap_compare(app, terminal_size=SMALL, run_before=SCENES[scene])
