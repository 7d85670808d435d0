"""The requests stage of the data flow: turn built instances into backend requests and the
answers back into per-sample scores (pronoun masses, subject scores, contrastive continuations).

Sits between the data builders and metrics below and the experiments above; it knows the
request types, not any backend.
"""
