"""`python -m haygraph.adapters.cli`: the `haygraph` command."""

import sys

from haygraph.adapters.cli.main import main

sys.exit(main())
