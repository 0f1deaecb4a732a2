"""Sphinx configuration of the mlsched-opt documentation (``make docs``).

The pages that describe the code are generated from it at build time (``_ext/mlsched_docs.py``):
the API reference of every module, one page per problem family from the registry, the CLI from the
click group, the results from the stored outputs in ``results/data``.  The build runs with warnings
as errors and ``nitpicky`` on, so a cross-reference in a docstring that names nothing fails it.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path[:0] = [str(ROOT), str(DOCS / "_ext")]

import mlsched_opt  # noqa: E402 -- after the path: the checkout's package, not an installed one

project = "mlsched-opt"
author = "the mlsched-opt authors"
copyright = "the mlsched-opt authors, MIT licence"
release = mlsched_opt.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx_click",
    "sphinx_copybutton",
    "mlsched_docs",
]

exclude_patterns = ["_build", "results/data", "Thumbs.db", ".DS_Store", "**/.ipynb_checkpoints"]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb", ".rst": "restructuredtext"}

# MyST: headings get anchors down to level 3, so pages can link to sections (page.md#heading)
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 3
# the notebooks are shown as stored (executed by notebooks/execute.py and tests/test_notebooks.py), never run here
nb_execution_mode = "off"
nb_merge_streams = True

# every cross-reference must resolve: a docstring naming something that does not exist fails the build
nitpicky = True

# option names (--solver) and quotes in code-like text stay as typed
smartquotes = False

# each object documented once, in the module that defines it (a package's re-exports are not repeated)
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
autodoc_member_order = "bysource"
# a method without a docstring of its own is not documented with its base class's (torch's, click's)
autodoc_inherit_docstrings = False
autodoc_typehints = "signature"
# defaults as values (60.0), not as written: reading every function's source took as long as the rest of the build
autodoc_preserve_defaults = False
autoclass_content = "class"
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
# "a, b, c" documented together stays one entry (napoleon would repeat the description for each)
napoleon_use_param = False

html_theme = "furo"
html_title = f"mlsched-opt {release}"
html_static_path: list[str] = []
copybutton_prompt_text = r"\$ "
copybutton_prompt_is_regexp = True
