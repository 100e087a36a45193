"""Delegation to backends: ``to_backend``, partitioners, ``LoweredBackendModule``.

Three ways, as the tutorial shows:

- ``to_backend(backend_id, edge_program, compile_specs)`` lowers a whole
  edge program to a ``LoweredBackendModule``;
- that module can be called from another ``nn.Module``, which then exports
  with a ``torch.ops.higher_order.executorch_call_delegate`` call;
- ``to_backend(edge_program, partitioner)`` (or
  ``EdgeProgramManager.to_backend(partitioner)``) lowers the subgraphs the
  partitioner tags.
"""
