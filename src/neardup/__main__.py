"""``python -m neardup``: the command line (the console script's entry point)."""
from neardup.cli import entry

if __name__ == "__main__":  # pragma: no cover
    entry()
