"""CID's measures: the fraction of prompts rated biased, lambda* and the similarity curves."""
