"""Specialisations for the host driver (Triton interpreter on host memory)."""
