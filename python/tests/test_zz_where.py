def test_where():
    import ember.exir, ember._C, ember.runtime
    print("\nWHERE", ember.exir.__file__, ember._C.__file__, ember.runtime.__file__)
