"""``python -m collectives.bench``: the benchmark, as ``collsim bench`` runs it."""

import argparse
import sys

from . import cli

parser = argparse.ArgumentParser(prog="python -m collectives.bench",
                                 description=cli.__doc__.splitlines()[0])
cli.add_arguments(parser)
sys.exit(cli.main(parser.parse_args()))
