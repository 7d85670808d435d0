"""Fine-tuning with LEI's group losses (Zhao et al. 2021, Appendix B.2)."""
