"""Operator dialects of Ember's intermediate representation."""
