"""Verified pairs → clusters → which document to keep."""
from .cluster import KEEP_POLICIES, Clusters, build_clusters

__all__ = ["KEEP_POLICIES", "Clusters", "build_clusters"]
