"""``python -m collsim COMMAND ...``: the ``collsim`` command, also how ranks are launched."""

import sys

from .cli import main

sys.exit(main())
