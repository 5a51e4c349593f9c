"""What a dedup method provides to the steps of a run (:class:`Method`): its signer, the layout of
its signatures, how it finds duplicates among them, the index it grows, and the parameters its
signatures depend on. A step asks the run's method (:func:`neardup.dedup.methods.method_of`) rather
than branching on the method's name."""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from ...config import DedupConfig
from ...errors import ConfigError
from ..finish import EQUAL_RULE, FinishRule
from ..spans import make_signer
from ..step import Step


class Method:
    """One method (a subclass per module of :mod:`neardup.dedup.methods`). A document's signature is
    :meth:`slots` words of :meth:`dtype` (a matrix of n rows), or one word (a vector of n)."""

    name: ClassVar[str] = ""
    spans: ClassVar[bool] = False       # duplicates inside documents: the span step finds them
    column: ClassVar[str] = ""          # the signature column of `neardup sign`'s Parquet
    sizes: ClassVar[bool] = False       # the signer gives each document's shingle set size (kept by a run)

    def dtype(self, cfg: DedupConfig) -> np.dtype:
        """The type of one signature word."""
        return np.dtype(np.uint64)

    def slots(self, cfg: DedupConfig) -> int | None:
        """Words per signature row when the values are a matrix (MinHash's k slots, even k = 1); None
        when they are a vector, one word per document."""
        return None

    def row_bytes(self, cfg: DedupConfig) -> int:
        """Bytes of one document's values as a run holds them (an index's stored rows included)."""
        return (self.slots(cfg) or 1) * self.dtype(cfg).itemsize

    def no_values(self, cfg: DedupConfig) -> np.ndarray:
        """The values of no documents, in this method's layout."""
        k = self.slots(cfg)
        return np.zeros((0,) if k is None else (0, k), dtype=self.dtype(cfg))

    def signer(self, cfg: DedupConfig):
        """``sign(texts) -> (values, empty, sizes)`` (see :mod:`neardup.dedup.signing`)."""
        raise NotImplementedError

    def value_signer(self, cfg: DedupConfig):
        """``sign(texts) -> values`` alone (what ``neardup sign`` writes)."""
        sign = self.signer(cfg)
        return lambda texts: sign(texts)[0]

    def text_checks(self, cfg: DedupConfig, texts_of, n: int, fixed: int, sets_of=None, spill=None):
        """(exact_pairs, sets_of) for :meth:`find`: what this method checks on the documents' texts
        (``texts_of(docs)`` gives them), given n rows of which the first ``fixed`` are an index's;
        (None, None) for a method that decides on signatures alone."""
        return None, None

    def find(self, values, empty, sizes, features, cfg: DedupConfig, lengths, keys, fixed: int,
             exact_pairs=None, sets_of=None):
        """The run's :class:`~neardup.dedup.result.DuplicateResult` from its signatures; the first
        ``fixed`` rows are an index's documents (see :func:`neardup.dedup.find.find_run`)."""
        raise ConfigError(f"--method {self.name} finds duplicates inside documents (the span step), not "
                          "between whole documents")

    def index_kind(self, cfg: DedupConfig) -> str:
        """The kind of index a run of this method grows (``--index``)."""
        raise ConfigError(f"--method {self.name} keeps no index (--index)")

    def create_index(self, path, cfg: DedupConfig, exist_ok: bool):
        """A folder index with the run's parameters (``exist_ok``: open an existing one, which must match)."""
        raise ConfigError(f"--method {self.name} keeps no index (--index)")

    def warm_ups(self, cfg: DedupConfig, explicit: bool) -> tuple[str, ...]:
        """The install-time warm-up's steps after its small run (:mod:`neardup.engines.local.warmup`):
        among ``linkage``, ``band``, ``stretches`` and ``index`` (``explicit``: the warmup command)."""
        return ()

    def sig_params(self, cfg: DedupConfig) -> dict:
        """The parameters a signature depends on (so a reader can tell whether two files compare)."""
        return {"convert": cfg.convert}

    def signs(self, cfg: DedupConfig) -> str:
        """What signing makes of a document (the plan's ``read_sign`` step, one line)."""
        raise NotImplementedError

    def steps(self, cfg: DedupConfig) -> tuple[Step, ...]:
        """The method's own steps of a run's plan (:mod:`neardup.dedup.plan`), after signing."""
        raise NotImplementedError

    def finish_rule(self, cfg: DedupConfig) -> FinishRule:
        """How the run's verified pairs become clusters (:class:`~neardup.dedup.finish.FinishRule`):
        equal signatures by default (transitive closure, nothing compared)."""
        return EQUAL_RULE


class SpanMethod(Method):
    """A method of duplicates inside documents: signed and found by the span step
    (:mod:`neardup.dedup.spans`), whose signer gives each document's payload."""

    spans = True

    def signer(self, cfg: DedupConfig):
        return make_signer(cfg)

    def steps(self, cfg):
        return (Step("find", "documents", "span", self.finds(cfg)),)

    def finds(self, cfg) -> str:
        """What the span step removes (one line)."""
        raise NotImplementedError


__all__ = ["Method", "SpanMethod"]
