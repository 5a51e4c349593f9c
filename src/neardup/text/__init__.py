"""Text → normalised UTF-8 batches and tokens."""
from .normalize import Normalizer, encode_batch
from .tokenize import TOKENIZERS, tokenize

__all__ = ["Normalizer", "encode_batch", "TOKENIZERS", "tokenize"]
