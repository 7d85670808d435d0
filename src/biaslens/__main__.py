"""``python -m biaslens``: the command line."""

from biaslens.cli import main

main()
