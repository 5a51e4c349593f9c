"""Verified pairs → clusters → which document to keep."""
from .cluster import KEEP_POLICIES, LINKAGES, Clusters, SimilarityOracle, build_clusters

__all__ = ["KEEP_POLICIES", "LINKAGES", "Clusters", "SimilarityOracle", "build_clusters"]
