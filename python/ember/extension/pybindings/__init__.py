"""``ember.extension.pybindings.portable_lib``: ExecuTorch's pybindings names."""
