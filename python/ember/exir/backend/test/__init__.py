"""The tutorial's demo backend and demo partitioner."""
