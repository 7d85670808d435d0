"""``biaslens export lm-eval``: the methods lm-evaluation-harness can run, as its tasks
(:mod:`.tasks`; each method's task is its own, declared in its ``MethodSpec``)."""
