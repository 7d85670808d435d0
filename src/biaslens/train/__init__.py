"""Fine-tuning with group losses (LEI, Zhao et al. 2021, Appendix B.2)."""
