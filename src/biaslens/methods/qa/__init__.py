"""Underspecified two-subject QA (UnQover, :mod:`.unqover`) and LEI's ethical interventions,
zero-shot (:mod:`.lei_eval`) and after few-shot fine-tuning (:mod:`.lei_train`)."""
