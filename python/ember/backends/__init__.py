"""Ember's backends (delegates): ``ember.backends.xnnpack``."""
