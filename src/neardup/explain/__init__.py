"""Why two documents are (not) near-duplicates: one sentence, then the evidence.

* :mod:`.replay` — a small run: dedup's rules on a pair (``compare``) or on the members of two
  clusters of a finished run (``explain``), every fact kept (candidates, estimates, the borderline
  band, exact checks, the clusters by the run's own finish step, bounded linkage's merges and
  refusals);
* :mod:`.verdict` — the sentence: the verdict, the rule that decided, its numbers, and what would
  change it;
* :mod:`.evidence` — each method in its own terms (MinHash slots and bands, containment both
  ways, SimHash bits and the features that flip them, the longest sentences);
* :mod:`.render` — the evidence as text.
"""
from __future__ import annotations

from .evidence import compact_explanation, explain_minhash, explain_pair, explain_sentences, explain_simhash
from .render import SLOT_CHOICES, render

__all__ = ["SLOT_CHOICES", "compact_explanation", "explain_minhash", "explain_pair", "explain_sentences",
           "explain_simhash", "render"]
