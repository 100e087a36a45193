"""ExecuTorch's ``executorch.extension`` names, rooted at ``ember``."""
