"""UnQover's measures (the paper's Section 3: bias intensity, count-based rates, the positional and
attributive errors) and LEI's measures over them, as pure functions of per-example scores."""
