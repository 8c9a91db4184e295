"""Sphinx configuration of the airflow-provider-kgroups documentation.

Built by ``make docs`` and by the test suite (``tests/docs/test_site.py``) with warnings as
errors (``-W --keep-going``) and nitpicky references (``-n``). Reference pages are generated
from the code (autodoc for the Airflow classes and the client, sphinx-argparse for the
``kgroups`` command, ``_ext/kgroups_docs.py`` for the ``[kgroups]`` section and the connection
forms, ``_ext/kgroups_layers.py`` for the layers' picture), so they cannot drift from it.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path[:0] = [str(DOCS / "_ext"), str(ROOT)]

from airflow_provider_kgroups import __version__

project = "airflow-provider-kgroups"
author = "The airflow-provider-kgroups authors"
copyright = "the airflow-provider-kgroups authors, Apache License 2.0"
version = release = __version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx_autodoc_typehints",
    "sphinxarg.ext",
    "kgroups_docs",
    "kgroups_layers",
]

exclude_patterns = ["_build"]
root_doc = "index"
nitpicky = True
# Intersphinx would need the network at build time (CI and this machine have none): references
# into other projects' documentation are left unresolved on purpose, by package, and only those.
# A reference to this package's own objects that does not resolve is still an error.
nitpick_ignore_regex = [
    (
        r"py:.*",
        r"(airflow|pyspark|pyarrow|pandas|numpy|fsspec|kafka|requests|urllib3|msgspec|datetime|asyncio|"
        r"collections|typing|typing_extensions|concurrent|enum|logging|pathlib|ssl|types|contextvars|"
        r"collections\.abc|_contextvars|abc|os|re|socket|argparse|openlineage)(\..*)?",
    ),
    # the names typing writes in annotations, without a module
    (
        r"py:class",
        r"(Any|Callable|Sequence|Mapping|Iterable|Iterator|AsyncIterator|Awaitable|Coroutine|"
        r"Literal|TypeVar|Self|T|K|V|NoneType|timedelta|datetime|Context|Asset|BaseTrigger|"
        r"TriggerEvent|DataFrame|SparkSession)",
    ),
    # sphinx-autodoc-typehints' rendering of ``tuple[X, ...]`` field annotations in dataclass signatures
    (r"py:data", r"Ellipsis"),
    (r"py:class", r"'tuple\[.*"),
    # type variables of generic results (KeyedResults[K, V]) are no documented objects
    (r"py:(class|obj)", r"airflow_provider_kgroups\.client\.results\.[KVT]"),
]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
typehints_defaults = "comma"
always_document_param_types = False

html_theme = "furo"
html_title = f"airflow-provider-kgroups {release}"
html_static_path: list[str] = []
html_show_sourcelink = False
pygments_style = "sphinx"
pygments_dark_style = "monokai"

# sphinx-autodoc-typehints 3.6 calls an API Sphinx 9 deprecates (a Python warning, not a build warning)
import warnings

from sphinx.deprecation import RemovedInSphinx10Warning

warnings.filterwarnings("ignore", category=RemovedInSphinx10Warning, module="sphinx_autodoc_typehints.*")
