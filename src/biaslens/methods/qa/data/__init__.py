"""Dataset builders of the question-answering family: UnQover's question sets from its word lists,
LEI's interventions, splits and specified contexts, SQuAD-format reading."""
