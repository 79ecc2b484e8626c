"""Spatial ops on N-C-spatial tensors: adaptive pooling, interpolation
(linear/bilinear/nearest/nearest-exact), reflection/replication padding, im2col/col2im."""

KERNELS = {}
