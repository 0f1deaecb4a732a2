"""Instance, solution and workload-catalog files."""

from .catalog import Catalog, Workload, load_catalog
from .files import read_document, write_document
from .instance import Instance, Job, Range, Server, Utility, from_document, load_instance

__all__ = [
    "Catalog", "Instance", "Job", "Range", "Server", "Utility", "Workload",
    "from_document", "load_catalog", "load_instance", "read_document", "write_document",
]
