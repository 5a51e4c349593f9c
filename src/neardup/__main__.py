"""``python -m neardup``: the command line."""
from neardup.cli import entry

if __name__ == "__main__":  # pragma: no cover
    entry()
