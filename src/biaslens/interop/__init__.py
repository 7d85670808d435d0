"""biaslens's probes in other tools: lm-evaluation-harness tasks (:mod:`.lm_eval`) and
inspect_ai tasks (:mod:`.inspect_tasks`)."""
