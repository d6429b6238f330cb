"""Where a sub-schedule's elements live in the real working buffer.

A sub-schedule (one channel of a schedule, one phase of a hierarchical one) runs on a
*virtual* vector ``[0, size)``; a :class:`Placement` maps it, piece by piece, onto element
ranges of the real working buffer.  Each piece keeps its length and order, so a virtual
range maps to a few real ranges, merged where they touch.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate
from typing import Callable, Sequence

import numpy as np

__all__ = ["Placement"]

Range = tuple[int, int]


@dataclass(frozen=True)
class Placement:
    """Virtual elements ``[vstarts[i], vstarts[i] + lengths[i])`` lie at ``rstarts[i]`` on.

    Parameters
    ----------
    rstarts : tuple of int
        Real start of each piece.
    lengths : tuple of int
        Length of each piece (> 0); the pieces follow each other in virtual order.
    """

    rstarts: tuple[int, ...]
    lengths: tuple[int, ...]

    @classmethod
    def of(cls, ranges: Sequence[Range]) -> "Placement":
        """Return the placement of the concatenation of real ``ranges``.

        Parameters
        ----------
        ranges : sequence of (int, int)
            Real ranges, in virtual order; empty ones are dropped, touching ones merged.

        Returns
        -------
        Placement

        Examples
        --------
        >>> Placement.of([(4, 6), (6, 8), (0, 2)])
        Placement(rstarts=(4, 0), lengths=(4, 2))
        """
        rstarts: list[int] = []
        lengths: list[int] = []
        for lo, hi in ranges:
            if hi <= lo:
                continue
            if rstarts and rstarts[-1] + lengths[-1] == lo:
                lengths[-1] += hi - lo
            else:
                rstarts.append(lo)
                lengths.append(hi - lo)
        return cls(tuple(rstarts), tuple(lengths))

    @property
    def size(self) -> int:
        """Elements of the virtual vector."""
        return sum(self.lengths)

    @property
    def shift(self) -> int | None:
        """``real - virtual`` when it is the same for every element (one piece or none),
        else None."""
        if len(self.rstarts) > 1:
            return None
        return self.rstarts[0] if self.rstarts else 0

    @cached_property
    def _vstarts(self) -> tuple[int, ...]:
        """Virtual start of each piece, and the size last (computed once: a channel's
        placement is asked for the ranges of every operation of its ranks)."""
        return tuple(accumulate(self.lengths, initial=0))

    @cached_property
    def _vstarts_array(self) -> np.ndarray:
        """:attr:`_vstarts` as an array (made once: :meth:`range_lengths` is asked at
        every rank's part)."""
        return np.array(self._vstarts, dtype=np.int64)

    @cached_property
    def _rstarts_array(self) -> np.ndarray:
        """:attr:`rstarts` as an array (made once: :meth:`range_starts` is asked at every
        rank's part)."""
        return np.array(self.rstarts, dtype=np.int64)

    def ranges(self, start: int, stop: int) -> list[Range]:
        """Return the real ranges of virtual ``[start, stop)``, merged where they touch.

        Parameters
        ----------
        start, stop : int
            A virtual range, ``0 <= start <= stop <= size``.

        Returns
        -------
        list of (int, int)
            At least one range: an empty virtual range maps to one empty real range.

        Examples
        --------
        >>> Placement.of([(4, 6), (0, 2)]).ranges(1, 3)
        [(5, 6), (0, 1)]
        """
        vstarts = self._vstarts
        if start >= stop:
            index = min(bisect_right(vstarts, start) - 1, len(self.rstarts) - 1)
            at = self.rstarts[index] + start - vstarts[index] if index >= 0 else 0
            return [(at, at)]
        pieces = self._pieces(vstarts, start, stop)
        if not self._merges:  # a run of this placement's pieces has nothing to merge
            return pieces
        return Placement.of(pieces).as_ranges()

    def range_lengths(self, starts: np.ndarray, stops: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`ranges` of many virtual ranges at once, as counts and lengths.

        Parameters
        ----------
        starts, stops : ndarray of int64
            Virtual ranges, each ``0 <= start <= stop <= size`` (or ``start >= stop``:
            one empty real range, as :meth:`ranges` gives).

        Returns
        -------
        tuple of ndarray of int64
            Per range, how many real ranges :meth:`ranges` returns; and their lengths,
            range by range, in order.

        Examples
        --------
        >>> where = Placement.of([(4, 6), (0, 2)])
        >>> [a.tolist() for a in where.range_lengths(np.array([1, 0, 3]), np.array([3, 1, 3]))]
        [[2, 1, 1], [1, 1, 1, 0]]
        """
        if self._merges or not self.lengths:  # rare: the ranges themselves
            return self._cut(starts, stops, lambda lo, hi: hi - lo)
        counts, of, piece, filled = self._pieces_of(starts, stops)
        vstarts = self._vstarts_array
        lengths = np.minimum(stops[of], vstarts[piece + 1]) - np.maximum(starts[of],
                                                                          vstarts[piece])
        return counts, np.where(filled[of], lengths, 0)

    def range_starts(self, starts: np.ndarray, stops: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`range_lengths` with the real ranges' starts in place of their lengths
        (same ``starts`` and ``stops``; counts, then starts range by range).

        Examples
        --------
        >>> where = Placement.of([(4, 6), (0, 2)])
        >>> [a.tolist() for a in where.range_starts(np.array([1, 0, 3]), np.array([3, 1, 3]))]
        [[2, 1, 1], [5, 0, 4, 1]]
        """
        if self._merges or not self.lengths:
            return self._cut(starts, stops, lambda lo, hi: lo)
        counts, piece, offset = self.range_pieces(starts, stops)
        return counts, self.piece_starts(piece) + offset

    def range_pieces(self, starts: np.ndarray, stops: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`range_starts` as pieces: the real ranges' starts are
        ``piece_starts(piece) + offset``; what the placement's piece lengths alone fix
        (:attr:`range_key`), for a placement whose ranges it gives
        (:attr:`by_pieces`).

        Returns
        -------
        tuple of ndarray of int64
            Per virtual range, how many real ranges; per real range, range by range, its
            piece and its offset in the piece.

        Examples
        --------
        >>> where = Placement.of([(4, 6), (0, 2)])
        >>> [a.tolist() for a in where.range_pieces(np.array([1, 0, 3]), np.array([3, 1, 3]))]
        [[2, 1, 1], [0, 1, 0, 1], [1, 0, 0, 1]]
        """
        counts, of, piece, _ = self._pieces_of(starts, stops)
        vstarts = self._vstarts_array
        return counts, piece, np.maximum(starts[of], vstarts[piece]) - vstarts[piece]

    def piece_starts(self, piece: np.ndarray) -> np.ndarray:
        """The real start of each of ``piece`` (pieces of :meth:`range_pieces`)."""
        return self._rstarts_array[piece]

    @property
    def by_pieces(self) -> bool:
        """Whether :meth:`range_pieces` gives this placement's ranges (its pieces do not
        merge, and it has some)."""
        return bool(self.lengths) and not self._merges

    def _cut(self, starts: np.ndarray, stops: np.ndarray,
             value: Callable[[int, int], int]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`ranges` of each virtual range, one at a time, as counts and ``value(lo,
        hi)`` of each real range."""
        cut = [self.ranges(a, b) for a, b in zip(starts.tolist(), stops.tolist())]
        return (np.array([len(pieces) for pieces in cut], dtype=np.int64),
                np.array([value(lo, hi) for pieces in cut for lo, hi in pieces],
                         dtype=np.int64))

    def _pieces_of(self, starts: np.ndarray, stops: np.ndarray) -> tuple[np.ndarray, ...]:
        """Per virtual range, how many pieces it spans (1 for an empty one); per real
        range, its virtual range and its piece; per virtual range, whether it is not
        empty (a placement of pieces that do not merge)."""
        vstarts = self._vstarts_array
        filled = starts < stops
        first = np.searchsorted(vstarts, starts, side="right") - 1
        last = np.searchsorted(vstarts, stops - 1, side="right") - 1
        counts = np.where(filled, last - first + 1, 1)
        of = np.repeat(np.arange(len(starts)), counts)  # each real range's virtual range
        piece = first[of] + np.arange(len(of)) - np.repeat(np.cumsum(counts) - counts, counts)
        piece = np.clip(piece, 0, len(self.lengths) - 1)  # an empty range's any piece
        return counts, of, piece, filled

    @property
    def range_key(self) -> object:
        """What :meth:`range_lengths` reads of this placement: its piece lengths where
        no pieces merge (placements with equal lengths then give equal answers), else
        the placement itself."""
        if self._merges or not self.lengths:
            return self
        return self.lengths

    @cached_property
    def _merges(self) -> bool:
        """Whether a piece is empty or ends where the next one starts (not after
        :meth:`of`, which drops and merges them): only then do a range's pieces need
        :meth:`of`."""
        return 0 in self.lengths or any(lo + n == nxt for lo, n, nxt in
                                        zip(self.rstarts, self.lengths, self.rstarts[1:]))

    def _pieces(self, vstarts: Sequence[int], start: int, stop: int) -> list[Range]:
        """The real pieces of virtual ``[start, stop)``, ``start < stop``: its first and
        last pieces cut, the whole ones between as they are (a slice, not a loop: a tree
        segment on a channel of ReduceScatter spans a piece per rank)."""
        first = bisect_right(vstarts, start) - 1
        last = bisect_right(vstarts, stop - 1) - 1
        rstarts = self.rstarts
        if first == last:
            offset = rstarts[first] - vstarts[first]
            return [(start + offset, stop + offset)]
        pieces = self._whole[first:last + 1]
        pieces[0] = (rstarts[first] + start - vstarts[first], pieces[0][1])
        pieces[-1] = (pieces[-1][0], rstarts[last] + stop - vstarts[last])
        return pieces

    @cached_property
    def _whole(self) -> list[Range]:
        """Every piece's real range (computed once, sliced by :meth:`_pieces`)."""
        return self.as_ranges()

    def as_ranges(self) -> list[Range]:
        """The real ranges, in virtual order."""
        return [(lo, lo + n) for lo, n in zip(self.rstarts, self.lengths)]

    def take(self, ranges: Sequence[Range]) -> "Placement":
        """Return the placement of the concatenation of virtual ``ranges`` of this one.

        Parameters
        ----------
        ranges : sequence of (int, int)
            Virtual ranges of this placement, in the new virtual order.

        Returns
        -------
        Placement

        Examples
        --------
        >>> Placement.of([(10, 20)]).take([(5, 10), (0, 2)])
        Placement(rstarts=(15, 10), lengths=(5, 2))
        """
        vstarts = self._vstarts
        return Placement.of([piece for lo, hi in ranges if hi > lo
                             for piece in self._pieces(vstarts, lo, hi)])
