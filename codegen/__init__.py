"""torch_ext's generator: musa_functions.yaml -> C++ for the PrivateUse1 key."""
