"""Features → sketches: MinHash signatures, SimHash fingerprints, sentence signatures."""
from .minhash import SCHEMES, MinHash, MinHasher, Signatures
from .sentences import SentenceSigner, exact_hash
from .sets import sign_sets
from .simhash import SimHasher, hamming, hamming_array, is_near

__all__ = ["SCHEMES", "MinHash", "MinHasher", "Signatures", "SentenceSigner", "exact_hash",
           "SimHasher", "hamming", "hamming_array", "is_near", "sign_sets"]
