"""Dataset builders of specification-induced bias: the Masked Gender Challenge, Winogender's
extended and Simplified sets, the pronoun lists, and the SIB authors' released outputs."""
