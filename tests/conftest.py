"""Session-wide settings, applied before torch_ext is imported: two simulated
devices (so privateuseone:1 exists) and the CPU fallback turned into an error
(tests that exercise the fallback switch it with torch_ext.fallback_mode)."""
import os

os.environ.setdefault("TORCH_EXT_HOST_DEVICES", "2")
os.environ.setdefault("TORCH_EXT_FALLBACK", "error")
