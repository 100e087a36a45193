"""ExecuTorch's module path of the XNNPACK partitioner
(``...xnnpack.partition.xnnpack_partitioner``)."""
