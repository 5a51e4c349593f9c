"""Tokens → hashed shingles (CSR feature batches), weights and IDF tables."""
from .shingles import Features, Shingler
from .weights import IdfTable

__all__ = ["Features", "Shingler", "IdfTable"]
