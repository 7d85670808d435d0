"""Zero-shot LEI (Zhao et al., Section 4): its settings (:mod:`.settings`), how its questions
are scored (:mod:`.scores`) and the method (:mod:`.method`)."""
