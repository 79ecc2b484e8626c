"""tests/native: torch.* calls on privateuseone tensors through the
dispatcher, fallback = error (tests/conftest.py), against CPU
(tests/helpers.py compares)."""

import torch_ext  # noqa: F401  (registers the device)


def pytest_configure(config):
    # Masked-off lanes of interpreted kernels compute on padding (0/0, log(0)).
    config.addinivalue_line("filterwarnings", "ignore::RuntimeWarning")
