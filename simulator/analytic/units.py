"""How a unit of a cut class over several runs of the buffer goes: a transfer
per run, by kind (:data:`RUN_KINDS`)."""

from __future__ import annotations

import numpy as np

from .arrays import _ceil_div


#: the kinds of transfer a unit of a cut class over several runs of the buffer goes as
#: (:func:`_unit_runs`): its first run's part, whole runs of the longer and of the
#: shorter length, its last run's part
RUN_KINDS = 4


def _unit_sizes(counts: np.ndarray, cut: np.ndarray, blocks: np.ndarray,
                base: np.ndarray) -> np.ndarray:
    """Which units of a vector of ``counts`` elements (classes x counts) cut into
    ``blocks`` near-equal blocks, each into ``cut`` near-equal parts (each class's; the
    first blocks and parts one element larger where some are), are one element smaller
    than the largest: as :func:`_carries_smaller` reads them, per class ``cut``, the
    block numbers' ``base`` (:attr:`_Described.blocks`), the larger blocks and from
    which part on a larger block's and a smaller block's units are the smaller (``cut``
    where none is), stacked (5 x classes x counts).  A block of ``b`` elements has parts
    of ``b // cut`` and one more, so of the largest block's ``L`` (its largest part)
    only those from ``b % cut`` on are smaller, and none where ``b`` is ``L * cut``."""
    size, extra = np.divmod(counts, blocks)
    largest = _ceil_div(size + (extra > 0), cut)

    def smaller_from(block: np.ndarray) -> np.ndarray:
        return np.where(block // cut >= largest, cut, block % cut)
    shape = counts.shape
    return np.stack([np.broadcast_to(cut, shape), np.broadcast_to(base, shape), extra,
                     np.where(extra > 0, smaller_from(size + 1), cut), smaller_from(size)])


def _unit_spans(count: np.ndarray, cut: int, blocks: int, backward: bool,
                at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each unit of a cut class starts in the vector and its elements (units x
    counts): ``count`` elements from ``at`` (counts) cut into ``blocks`` near-equal
    blocks, each into ``cut`` near-equal parts (the first ones one element larger),
    taken block by block (from the last, ``backward``), each block's parts in order
    (:attr:`collectives.traffic.Messages.cut`)."""
    unit = np.arange(cut * blocks)[:, None]
    block = unit // cut
    if backward:
        block = blocks - 1 - block
    part = unit % cut
    size, extra = np.divmod(count, blocks)
    length = size + (block < extra)
    small, larger = np.divmod(length, cut)
    start = at + block * size + np.minimum(block, extra) + part * small + np.minimum(part, larger)
    return start, small + (part < larger)


def _unit_runs(start: np.ndarray, length: np.ndarray, count: np.ndarray, positions: int,
               longest: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The transfers that ``length`` elements from ``start`` (units x counts) of a
    channel's vector of ``count`` elements go as, a transfer per run of the buffer they
    meet (:func:`collectives.compose.channel_parts`: the channel's part of each of
    ``positions`` blocks, the near-equal parts of its vector, the first ones one larger;
    but where the longest run is ``longest`` elements, more than those, the channel's
    parts of blocks of at most one element meet: runs of one element, then one of
    ``longest``, :func:`collectives.traffic.channel_runs`): how many transfers of each
    of :data:`RUN_KINDS` kinds and their elements (each kinds x units x counts), the
    first run's part, whole runs of the longer and of the shorter length, the last
    run's part (an empty unit a transfer of none)."""
    merged = longest > _ceil_div(count, positions)
    size = np.where(merged, 1, count // positions)
    longer = np.where(merged, 0, count % positions)
    regular = np.where(merged, count - longest, positions)  # runs before the merged one
    edge = np.where(merged, count - longest, count)

    def run(element: np.ndarray) -> np.ndarray:
        past = longer * (size + 1)
        at = np.where(element < past, element // (size + 1),
                      longer + (element - past) // np.maximum(size, 1))
        return np.where(element >= edge, regular, at)

    def begins(index: np.ndarray) -> np.ndarray:
        return np.where(index >= regular, edge, index * size + np.minimum(index, longer))
    end = start + length
    first, last = run(start), run(np.maximum(end - 1, start))
    one = (length <= 0) | (first == last)
    whole = np.maximum(last - first - 1, 0)
    long_runs = np.clip(np.minimum(last, longer) - first - 1, 0, None)
    weights = np.stack([np.ones(one.shape), np.where(one, 0, long_runs),
                        np.where(one, 0, whole - long_runs), np.where(one, 0, 1)])
    elements = np.stack([np.where(one, np.maximum(length, 0), begins(first + 1) - start),
                         np.broadcast_to(size + 1, one.shape), np.broadcast_to(size, one.shape),
                         np.where(one, 0, end - begins(last))])
    return weights, elements
