"""What several backends share: batching and its memo, prompt encoding, the token-level
protocol of served models and the checks of their replies, forwarding, and the stand-in
model that counts requests for ``--dry-run``."""
