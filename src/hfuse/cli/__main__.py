"""``python -m hfuse.cli ...``: the ``hfuse`` command without its installed script."""
import sys

from . import main

sys.exit(main())
