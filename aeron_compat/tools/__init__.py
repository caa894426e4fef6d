"""Command-line tools: the `aeron_compat` command (cli.py), also `python -m aeron_compat`."""
