"""The app's mode screens."""

from .activity import ActivityScreen
from .browse import BrowseScreen
from .residue import ResidueScreen
from .review import ReviewScreen
from .undo import UndoScreen

MODES = {
    "browse": BrowseScreen,
    "review": ReviewScreen,
    "undo": UndoScreen,
    "residue": ResidueScreen,
    "activity": ActivityScreen,
}
