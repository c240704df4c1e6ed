"""`python -m loops._template NAME --style STYLE`: what `nox -s new` runs."""

import sys

from loops._template import main

sys.exit(main())
