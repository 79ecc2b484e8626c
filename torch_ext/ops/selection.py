"""Selection, counting and searching: median, kthvalue, mode, take/put,
index_fill, masked_scatter, count_nonzero, trace, equal, aminmax, isin,
searchsorted/bucketize, bincount, histc, unique, cross, logcumsumexp, cummax/cummin."""

KERNELS = {}
