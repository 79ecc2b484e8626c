"""Special functions (lgamma, digamma, polygamma, i0, sinc, nextafter, gcd),
more activations (mish, log_sigmoid, glu, prelu) and losses (binary cross entropy,
smooth L1, Huber)."""

KERNELS = {}
