"""What a method is written against: its specification and registry (:mod:`.spec`,
:mod:`.registry`), its settings (:mod:`.settings`), command-line options (:mod:`.options`),
presets (:mod:`.presets`), the names its settings answer to (:mod:`.names`) and the headline
estimates a run reports (:mod:`.estimates`). The methods themselves live in
:mod:`biaslens.methods`; :mod:`biaslens.runner` runs them."""
