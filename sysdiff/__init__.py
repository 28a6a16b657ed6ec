"""sysdiff: in-depth comparative evaluation of NLP system outputs at scale.

The code lives in the repository's ``flows/``, ``transforms/`` and ``schemas/`` folders,
installed as ``sysdiff.flows``, ``sysdiff.transforms`` and ``sysdiff.schemas``.
"""
