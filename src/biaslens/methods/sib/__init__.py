"""Specification-induced bias (McMilin): Method 1 on MGC (:mod:`.mgc`), the Method 2 detector
(:mod:`.detect`) and the toy structural causal model (:mod:`.toy`)."""
