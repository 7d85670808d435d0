"""SIB's measures: Method 1's slopes of the pronoun masses over W, Method 2's detector rates, and
the reference figures recomputed from the authors' released outputs."""
