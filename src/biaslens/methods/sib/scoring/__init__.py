"""The requests stage of SIB: sentences to masked-slot or prompt requests, answers to pronoun
masses."""
