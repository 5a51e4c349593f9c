"""``python -m neardup``: the command line (through the console script's entry point)."""
from neardup._start import main

if __name__ == "__main__":  # pragma: no cover
    main()
