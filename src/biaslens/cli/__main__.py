"""``python -m biaslens.cli``: the command line."""

from biaslens.cli import main

main()
