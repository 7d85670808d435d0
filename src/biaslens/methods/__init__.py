"""The methods, one module each, grouped by paper: :mod:`.sib` (specification-induced bias),
:mod:`.qa` (UnQover and LEI) and :mod:`.cid` (Contrastive Input Decoding).

A method module builds its data, asks for answers through the run's model and computes its
metrics, and registers itself once (:func:`biaslens.framework.registry.register`); the
registry finds every module here. A method of one's own is the same module in one's own
package, found through a ``biaslens.methods`` entry point.
"""
