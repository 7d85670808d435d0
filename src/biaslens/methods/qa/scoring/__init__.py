"""The requests stage of the question-answering family: questions to requests, and the answers
back to per-example subject scores (spans, first tokens, sampled replies)."""
