"""Contrastive Input Decoding (Yona et al.): one pair of inputs (:mod:`.pair`), the name-swap
audit (:mod:`.audit`) and λ* over perturbation families (:mod:`.sensitivity`)."""
