"""Dataset builders of Contrastive Input Decoding: the audit's name-pair prompts and the
sensitivity study's perturbations."""
