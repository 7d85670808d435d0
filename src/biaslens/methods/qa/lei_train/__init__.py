"""LEI few-shot fine-tuning (Zhao et al., Section 3): its settings (:mod:`.settings`), the grid
cells it trains (:mod:`.cells`), the run folder's bookkeeping (:mod:`.bookkeeping`), checkpoint
selection (:mod:`.selection`) and the method (:mod:`.method`)."""
