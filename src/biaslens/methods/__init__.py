"""The method families, one folder each, holding all of a family's own code: :mod:`.sib`
(specification-induced bias), :mod:`.qa` (UnQover and LEI) and :mod:`.cid` (Contrastive Input
Decoding).

A family's building blocks follow the data flow in folders of their own (``data/``,
``scoring/``, ``metrics/``, ``intervals/``, ``train/``, ``plots.py``); its methods are its other
modules. A method module builds its data, asks for answers through the run's model, computes
its metrics, and registers itself once (:func:`biaslens.method.register`); the registry
imports every method module here. A method of one's own is the same module in one's own
package, found through a ``biaslens.methods`` entry point.
"""
