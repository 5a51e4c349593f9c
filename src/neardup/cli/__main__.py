"""``python -m neardup.cli``: the command line."""
from neardup.cli import entry

entry()
