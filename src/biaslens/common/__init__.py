"""Leaf helpers that every layer may use: atomic writes, text-file reading with clear errors,
token padding, stop strings, cache folders. Nothing here imports another biaslens package
(``biaslens.errors`` aside), so models, decoding, data and the store can all depend on it."""
