"""The edge dialect: core ATen operators in their own namespace."""
