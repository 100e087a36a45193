"""Ember: export PyTorch programs to `.pte` files and run them on device."""
