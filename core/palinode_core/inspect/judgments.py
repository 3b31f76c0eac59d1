"""What the delivery audit found in one delivered version for one request,
kept in the store's cache folder (``judgments.sqlite3``) keyed by content: the
blob, its path and the request's words. A log of a million rows delivers the
same versions run after run; judging one (parse, segment, the leak check) is
what the audit spends its time on, so a later run reads the judgment instead.
Derived data only: damaged or unwritable, it is discarded and the audit judges
again, with nothing else lost."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from pathlib import Path

NAME = "judgments.sqlite3"
# bumped when what a judgment holds, or how it is made, changes: old rows are never read
VERSION = 2  # 2: one judgment (forget.judgment): whose words, specific words, Snowball stems
_BATCH = 500

Judgment = tuple[str, str, int] | None  # (live | retracted, the sentence, its line), or no mention


def window_key(
    request_path: str,
    norm: str,
    rid: str,
    stems: frozenset[str],
    carrying: frozenset[str],
    user_names: frozenset[str] = frozenset(),
) -> str:
    """What a judgment of a version depends on besides its bytes: the request,
    its words and the user's names (whose a sentence is: forget.judgment)."""
    data = json.dumps(
        [VERSION, request_path, norm, rid, sorted(stems), sorted(carrying), sorted(user_names)], ensure_ascii=False
    )
    return hashlib.sha256(data.encode()).hexdigest()[:32]


class JudgmentCache:
    def __init__(self, cache_dir: Path | None):
        self.notice: str | None = None
        self._db: sqlite3.Connection | None = None
        self._pending: list[tuple[str, str, str, str | None, str | None, int | None]] = []
        if cache_dir is None:
            return
        self.path = cache_dir / NAME
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
            self._db = self._open()
        except (sqlite3.Error, OSError) as exc:
            self._discard(exc)

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(
            "CREATE TABLE IF NOT EXISTS judged (blob TEXT, path TEXT, window TEXT, kind TEXT, sentence TEXT,"
            " line INTEGER, PRIMARY KEY (blob, path, window)) WITHOUT ROWID"
        )
        # a blob's bytes never change: the SHA-256 a receipt names is looked up, not read and hashed again
        db.execute("CREATE TABLE IF NOT EXISTS blob_sha256 (blob TEXT PRIMARY KEY, sha256 TEXT) WITHOUT ROWID")
        db.execute("SELECT COUNT(*) FROM judged WHERE blob = ''").fetchone()  # damage fails here
        return db

    def _discard(self, exc: BaseException) -> None:
        self.notice = f"delivery judgments cache unusable ({exc.__class__.__name__}); judged again"
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
        self._db = None
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError, AttributeError):
                os.unlink(f"{self.path}{suffix}")

    def get(self, blob: str, path: str, windows: list[str]) -> dict[str, Judgment] | None:
        """Every window's judgment of this version, or None unless all are kept."""
        if self._db is None:
            return None
        try:
            rows = self._db.execute(
                "SELECT window, kind, sentence, line FROM judged WHERE blob = ? AND path = ?", (blob, path)
            ).fetchall()
        except sqlite3.Error as exc:
            self._discard(exc)
            return None
        found: dict[str, Judgment] = {
            w: (kind, sentence, line) if kind is not None else None for w, kind, sentence, line in rows
        }
        if not all(w in found for w in windows):
            return None
        return {w: found[w] for w in windows}

    def put(self, blob: str, path: str, judged: dict[str, Judgment]) -> None:
        if self._db is None:
            return
        for window, j in judged.items():
            self._pending.append((blob, path, window, *(j if j is not None else (None, None, None))))
        if len(self._pending) >= _BATCH:
            self.flush()

    def hashes(self, blobs: list[str]) -> dict[str, str]:
        """The SHA-256 of each blob's bytes, for those already hashed."""
        if self._db is None or not blobs:
            return {}
        found: dict[str, str] = {}
        try:
            for start in range(0, len(blobs), 500):  # SQLite's bound on parameters
                part = blobs[start : start + 500]
                found.update(
                    self._db.execute(
                        f"SELECT blob, sha256 FROM blob_sha256 WHERE blob IN ({','.join('?' * len(part))})", part
                    ).fetchall()
                )
        except sqlite3.Error as exc:
            self._discard(exc)
            return {}
        return found

    def put_hashes(self, pairs: list[tuple[str, str]]) -> None:
        if self._db is None or not pairs:
            return
        try:
            self._db.executemany("INSERT OR REPLACE INTO blob_sha256 VALUES (?, ?)", pairs)
            self._db.commit()
        except sqlite3.Error as exc:
            self._discard(exc)

    def flush(self) -> None:
        if self._db is None or not self._pending:
            return
        try:
            self._db.executemany("INSERT OR REPLACE INTO judged VALUES (?,?,?,?,?,?)", self._pending)
            self._db.commit()
        except sqlite3.Error as exc:
            self._discard(exc)
        self._pending = []

    def close(self) -> None:
        self.flush()
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None
