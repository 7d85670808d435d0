"""Intervals of UnQover's and LEI's measures over the crossed design of templates, subjects and
activities."""
