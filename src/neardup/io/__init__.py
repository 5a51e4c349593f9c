"""The I/O edge: inputs named by the user (:mod:`.sources`), read through one registry of formats
(:mod:`.formats`) over integrity-checked streams (:mod:`.compression`), and an output folder
neardup owns (:mod:`.outdir`)."""
from ..errors import InputChangedError, InputFormatError, OutputError
from .formats import FORMATS, InputSpec, Row, read_rows, write_kept
from .outdir import StagedOutput
from .readers import Document, InputError, iter_documents
from .sources import expand_inputs, spool

__all__ = ["Document", "FORMATS", "InputChangedError", "InputError", "InputFormatError", "InputSpec", "OutputError",
           "Row", "StagedOutput", "expand_inputs", "iter_documents", "read_rows", "spool", "write_kept"]
