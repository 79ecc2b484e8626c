"""The cuda driver's Python side: Triton compiles for the GPU and launches on
the current `privateuseone` stream (see triton_driver.py); `spec.py` holds the
per-driver kernel specialisations."""
