"""``python -m gemmlab ...``: the gemmlab command, as the console script runs it (``_cli.py``)."""

from ._cli import main

main()
