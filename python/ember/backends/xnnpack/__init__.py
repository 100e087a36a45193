"""The XNNPACK delegate: ``XnnpackPartitioner`` claims what XNNPACK runs,
``EmberXnnpackBackend.preprocess`` writes it as an "EXN1" blob that
``backends/xnnpack`` (C++) builds into an XNNPACK runtime at load time.

    from ember.backends.xnnpack import XnnpackPartitioner
    edge = to_edge(export(model, inputs)).to_backend(XnnpackPartitioner())
"""

from ember.backends.xnnpack.partitioner import XnnpackPartitioner
from ember.backends.xnnpack.preprocess import BACKEND_ID, EmberXnnpackBackend, XnnpackLoweringError

__all__ = ["BACKEND_ID", "EmberXnnpackBackend", "XnnpackLoweringError", "XnnpackPartitioner"]
