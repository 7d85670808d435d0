"""``biaslens export lm-eval``: the probes lm-evaluation-harness can run, as its tasks
(:mod:`.tasks`; the ``utils.py`` their YAML names comes from :mod:`.task_utils`)."""
