"""Where a model's files come from: the hub (:mod:`.hub`), the PyPI packages that ship models
(:mod:`.packaged`) and local folders (:mod:`.local`), read without loading the model."""
