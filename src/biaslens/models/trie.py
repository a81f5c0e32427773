"""Prefix-trie packing: a batch of token sequences in which every distinct prefix is
computed once. Scoring (:mod:`biaslens.models.hf`) and prompt prefill in decoding
(:mod:`biaslens.models.generation`) use it.

The bookkeeping is vectorised (numpy over the batch's padded token matrix): no Python
loop runs per token, only one per packed row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from biaslens.models.tokenized import TokenRows, gather_index, lexicographic_order

__all__ = ["TriePack"]


class TriePack:
    """A batch of token sequences as prefix-trie nodes packed into rows.

    Every distinct prefix of the batch is one node, computed once: a node attends to
    itself and its ancestors (a tree-shaped causal mask) at position = its depth, which
    gives the same attention inputs as the plain causal forward of any sequence through
    it. Sequences are sorted so neighbours share prefixes; a row is closed when it would
    exceed ``max_nodes`` (attention costs grow with the row's square). Sequences shorter
    than ``min_length`` are left out (scoring needs two tokens; a prompt needs one).

    Sorted sequences make the trie a matter of neighbours: a sequence shares with the
    trie of its row exactly its longest common prefix with the sequence before it, so its
    first ``lcp`` tokens reuse that sequence's nodes and the rest are new nodes.

    Attributes (numpy arrays; nodes in creation order, i.e. sorted sequences, then depth):
        node_row, node_col: where each node sits in the packed rows.
        node_token, node_depth: its token and depth (= position id).
        node_parent: the parent's column in the same row (-1 at depth 0).
        position_col: for every token of the input (flat, input order), the column of its
            node in its sequence's row (-1 for sequences left out).
        seq_row: each input sequence's row (0 for sequences left out).
        included: whether each input sequence was packed.
    """

    def __init__(self, seqs: Sequence[Sequence[int]] | TokenRows, max_nodes: int, min_length: int = 2):
        rows = seqs if isinstance(seqs, TokenRows) else TokenRows.from_lists(list(seqs))
        lengths = rows.lengths
        n = len(rows)
        self._starts = rows.starts
        self.included = lengths >= max(1, min_length)
        kept = np.flatnonzero(self.included)
        self.position_col = np.full(len(rows.ids), -1, dtype=np.int64)
        self.seq_row = np.zeros(n, dtype=np.int64)
        self.n_rows = 0
        self.width = 0
        empty = np.zeros(0, dtype=np.int64)
        self.node_row = self.node_col = self.node_token = self.node_depth = self.node_parent = empty
        if not len(kept):
            return
        padded = rows.take(kept).padded(-1)
        order = lexicographic_order(padded)  # stable: equal sequences keep their input order
        tokens = padded[order]
        length = lengths[kept][order]
        m, span = tokens.shape
        lcp = np.zeros(m, dtype=np.int64)
        if m > 1:
            differ = tokens[1:] != tokens[:-1]
            first = np.where(differ.any(axis=1), differ.argmax(axis=1), span)
            lcp[1:] = np.minimum(first, np.minimum(length[1:], length[:-1]))
        # rows: greedy, as sequences arrive; a sequence opening a row shares nothing
        shared = lcp.copy()
        seq_row = np.empty(m, dtype=np.int64)
        new = length - lcp
        start = row = 0
        while start < m:
            counts = new[start:].copy()
            counts[0] = length[start]
            shared[start] = 0
            over = np.flatnonzero(np.cumsum(counts)[1:] > max_nodes)
            end = start + 1 + int(over[0]) if over.size else m
            seq_row[start:end] = row
            start, row = end, row + 1
        depth = np.arange(span, dtype=np.int64)
        valid = depth < length[:, None]
        fresh = valid & (depth >= shared[:, None])
        # global node ids in creation order; a shared position takes the node of the same depth
        # in the nearest sequence above it that created one (ids grow down each column)
        gid = np.where(fresh, np.cumsum(fresh.ravel()).reshape(m, span) - 1, -1)
        gid = np.maximum.accumulate(gid, axis=0)
        kk, dd = np.nonzero(fresh)  # row-major: the creation order
        node_row = seq_row[kk]
        first_of_row = np.zeros(row, dtype=np.int64)
        first_of_row[node_row[::-1]] = np.arange(len(kk) - 1, -1, -1)  # each row's first node id
        col = gid - first_of_row[seq_row][:, None]
        self.node_row, self.node_col = node_row, col[kk, dd]
        self.node_token, self.node_depth = tokens[kk, dd], dd
        self.node_parent = np.where(dd > 0, col[kk, np.maximum(dd - 1, 0)], -1)
        self.n_rows = row
        self.width = int(np.bincount(node_row, minlength=row).max())
        source = kept[order]
        self.seq_row[source] = seq_row
        self.position_col[gather_index(rows.starts[source], length)] = col[valid]
        self._fresh = (kk, dd, col)

    @property
    def rows(self) -> list[tuple[list[int], list[int], list[int]]]:
        """(tokens, parents, depths) of each packed row, as lists."""
        out = []
        for r in range(self.n_rows):
            sel = self.node_row == r
            out.append((self.node_token[sel].tolist(), self.node_parent[sel].tolist(), self.node_depth[sel].tolist()))
        return out

    @property
    def paths(self) -> list[tuple[int, list[int]]]:
        """(row, column of the node of each token) per input sequence; (0, []) for one left out."""
        cols, starts = self.position_col, self._starts
        return [(int(self.seq_row[i]), cols[starts[i] : starts[i + 1]].tolist()) if self.included[i] else (0, [])
                for i in range(len(self.seq_row))]

    def mask(self) -> np.ndarray:
        """Boolean (rows, width, width) ancestor mask: a node sees itself and its ancestors;
        padding columns see themselves only (no empty softmax rows)."""
        width = self.width
        mask = np.zeros((self.n_rows, width, width), dtype=bool)
        idx = np.arange(width)
        mask[:, idx, idx] = True
        if self.n_rows:
            kk, dd, col = self._fresh
            count = dd + 1  # a node created at depth d sees its path's columns 0..d
            seq = np.repeat(kk, count)
            depth = gather_index(np.zeros(len(kk), dtype=np.int64), count)
            mask[np.repeat(self.node_row, count), np.repeat(self.node_col, count), col[seq, depth]] = True
        return mask

    def arrays(self, pad_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """input ids and position ids (rows, width), and the ancestor mask (rows, width, width)."""
        ids = np.full((self.n_rows, self.width), pad_id, dtype=np.int64)
        pos = np.zeros((self.n_rows, self.width), dtype=np.int64)
        ids[self.node_row, self.node_col] = self.node_token
        pos[self.node_row, self.node_col] = self.node_depth
        return ids, pos, self.mask()

    def tensors(self, pad_id: int):
        """input ids, position ids and a boolean (rows, 1, width, width) ancestor mask."""
        import torch

        ids, pos, mask = self.arrays(pad_id)
        return torch.from_numpy(ids), torch.from_numpy(pos), torch.from_numpy(mask).unsqueeze(1), self.width
