"""``from ember.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner``,
the import path ExecuTorch's docs use (the class is
``ember.backends.xnnpack.XnnpackPartitioner``)."""

from ember.backends.xnnpack.partitioner import XnnpackPartitioner

__all__ = ["XnnpackPartitioner"]
