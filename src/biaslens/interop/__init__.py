"""biaslens's probes in other tools: lm-evaluation-harness tasks (:mod:`.lm_eval`)."""
