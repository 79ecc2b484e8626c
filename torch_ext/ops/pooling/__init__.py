"""Pooling: 2-d and 3-d max/average pooling, adaptive pooling, max_unpool."""
