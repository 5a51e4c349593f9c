"""``python -m neardup``: the command line."""
from neardup.cli import main

if __name__ == "__main__":  # pragma: no cover
    main(prog_name="neardup")
