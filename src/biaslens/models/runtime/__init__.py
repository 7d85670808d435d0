"""What several backends share: batching and its memo, prompt encoding, the token-level
protocol of served models and the checks of their replies, forwarding, the stand-in model that
counts requests for ``--dry-run``, and the Ray runtime that model replicas and LEI's grid of
fine-tunings are placed on."""
