"""The error every data reader raises (loaders, benchmark rows, code problems, labels)."""


class DataError(ValueError):
    """Task data that cannot be read; the message says what is wrong and how to fix it."""


__all__ = ["DataError"]
