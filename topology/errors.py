"""The exception a malformed topology raises."""

__all__ = ["TopologyError"]


class TopologyError(ValueError):
    """A topology (built in code or read from a file) is malformed.

    The message names the offending key as it is spelled in a topology file
    (``links[3].bandwidth``, ``devices[5].id``, ``placement[2]``) and its value.
    """
