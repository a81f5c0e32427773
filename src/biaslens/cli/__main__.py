"""`python -m biaslens.cli`: the same as the `biaslens` command."""

from biaslens.cli import main

main()
