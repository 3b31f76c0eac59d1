"""What an attacker's review of this stop's merges found (a hostile journal's index
entry, a preference the cascade covered once, a mention search called unrelated)."""
from __future__ import annotations

import subprocess

import pytest

from helpers import make_git_store, palinode_file
from palinode_core.errors import GitError
from palinode_core.search.embed import DIM
from palinode_core.search.index import SearchIndex
from palinode_core.storage.records import is_index_entry
from palinode_core.storage.store import Store


def test_a_journal_index_entry_that_git_did_not_write_never_reaches_git(tmp_path):
    root = make_git_store(tmp_path / "s", {"people/a.md": palinode_file({"id": "a"}, "Alpha.")})
    store = Store(root)
    blob = store.git.index_entries(["people/a.md"])["people/a.md"][1]
    assert is_index_entry(["100644", blob, "0"])
    hostile = [f"100644,{blob},people/planted.md", "--verbose", "0"]
    assert not is_index_entry(hostile) and not is_index_entry([]) and not is_index_entry(["100644", blob])
    with pytest.raises(GitError, match="not an index entry"):
        store.git.set_index_entry("people/a.md", hostile)
    staged = subprocess.run(["git", "-C", str(root), "ls-files", "-s"], capture_output=True, text=True).stdout
    assert "planted" not in staged


def test_a_preference_left_out_of_a_screening_is_no_longer_covered(tmp_path):
    root = make_git_store(tmp_path / "s", {"people/a.md": palinode_file({"id": "a"}, "Alpha.")})
    units = SearchIndex(Store(root), None, cache_dir=tmp_path / "c").units  # type: ignore[arg-type]
    vec = bytes(4 * DIM)
    units.near("I drink tea", vec)
    units.near("I keep bees", vec)
    units.mark_screened([], ["I drink tea", "I keep bees"])
    assert units.covered_prefs(["I drink tea", "I keep bees"]) == {"I drink tea", "I keep bees"}
    # new texts judged far from the bees only: the tea was not asked about them
    units.mark_screened(["h" * 64], ["I keep bees"])
    assert units.covered_prefs(["I drink tea", "I keep bees"]) == {"I keep bees"}


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_a_memory_holding_the_query_word_is_related_however_busier_another_is(tmp_path, embedder):
    filler = " ".join(f"The meeting on item {i} ran long and the minutes were filed." for i in range(60))
    root = make_git_store(tmp_path / "s", {
        "people/club.md": palinode_file({"id": "club"}, "Harmonica night. " * 6 + "Bring a harmonica."),
        "people/aunt.md": palinode_file({"id": "aunt"}, filler + " My aunt Rosa once borrowed a harmonica from me."),
    })
    index = SearchIndex(Store(root), embedder, cache_dir=tmp_path / "c")
    index.update()
    hits = {h.path: h for h in index.search("harmonica", 50).hits}
    assert hits["people/aunt.md"].related and hits["people/club.md"].related
