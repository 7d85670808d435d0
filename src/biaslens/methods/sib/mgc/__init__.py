"""SIB Method 1 on the MGC set (paper Section 4, Appendices D-G): the method
(:mod:`.method`) and its comparison of several models (Fig. 3(b), :mod:`.compare`)."""
