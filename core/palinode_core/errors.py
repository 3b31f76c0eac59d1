"""Every error the core raises on purpose derives from PalinodeError, so a
client can show ``str(err)`` as a one-line reason and never a traceback."""


class PalinodeError(Exception):
    """Base class: the message is a complete, user-facing sentence."""


class PathError(PalinodeError, ValueError):
    """A path argument is malformed or escapes the store."""


class MemoryNotFound(PalinodeError, FileNotFoundError):
    """No memory file at that path."""


class UnreadableMemory(PalinodeError):
    """The file exists but cannot be used as a memory (binary, huge, bad UTF-8, bad YAML)."""


class StalePlan(PalinodeError):
    """A plan's file changed after the plan was made; applying it blindly could lose work."""


class UncommittedEdits(PalinodeError):
    """A file a plan would commit holds the user's own uncommitted edits (index
    or worktree differs from HEAD): committing it would pass them off as ours."""


class UsageError(PalinodeError):
    """A command's arguments do not fit what it acts on (the CLI exits 2, as for
    any usage error)."""


class ReadOnlyError(PalinodeError):
    """A mutation was attempted while the store is opened read-only."""


class GitError(PalinodeError):
    """Git is in a state where a commit cannot be made safely."""


class NotAForgetRequest(PalinodeError):
    """The named memory does not contain a forget request."""


class EmbeddingUnavailable(PalinodeError):
    """Text had to be embedded but the embedding model could not load."""


class Cancelled(Exception):
    """Long work (a scan, an index update) stopped because its owner is shutting
    down; nothing half-written is kept. Not a PalinodeError: nobody failed."""
