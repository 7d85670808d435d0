"""What a method is written against: its specification and registry (:mod:`.spec`,
:mod:`.registry`), its settings (:mod:`.settings`) and the command-line options read from them
(:mod:`.options`), presets (:mod:`.presets`), the names its settings answer to (:mod:`.names`),
the headline estimates a run reports (:mod:`.estimates`) and what a method adds besides its
run: an lm-evaluation-harness task and commands of its own (:mod:`.hooks`, :mod:`.lm_eval`).
The methods themselves live in :mod:`biaslens.methods`; :mod:`biaslens.runner` runs them."""
