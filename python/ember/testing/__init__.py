"""Test helpers that ship with the package (importable once ``ember`` is installed).

``ember.testing.op_samples``   which core ATen ops are tested, with which samples
``ember.testing.conformance``  one-op programs through the runtime, compared with eager
``ember.testing.coverage_report``  the ``docs/op-coverage.md`` table
``ember.testing.opinfo_sweep``  every OpInfo entry's Python-level op, failures by cause
``ember.testing.opinfo_report``  the ``docs/op-coverage-opinfo.md`` report
"""
