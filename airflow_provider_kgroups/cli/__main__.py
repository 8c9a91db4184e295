"""``python -m airflow_provider_kgroups.cli``: the same as the ``kgroups`` console script."""

import sys

from . import main

sys.exit(main())
