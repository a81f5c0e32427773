"""Prefix-trie packing: a batch of token sequences in which every distinct prefix is
computed once. Scoring (:mod:`biaslens.models.hf`) and prompt prefill in decoding
(:mod:`biaslens.models.generation`) use it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TriePack"]


class TriePack:
    """A batch of token sequences as prefix-trie nodes packed into rows.

    Every distinct prefix of the batch is one node, computed once: a node attends to
    itself and its ancestors (a tree-shaped causal mask) at position = its depth, which
    gives the same attention inputs as the plain causal forward of any sequence through
    it. Sequences are sorted so neighbours share prefixes; a row is closed when it would
    exceed ``max_nodes`` (attention costs grow with the row's square). Sequences shorter
    than ``min_length`` are left out (scoring needs two tokens; a prompt needs one).
    """

    def __init__(self, seqs: list[list[int]], max_nodes: int, min_length: int = 2):
        self.rows: list[tuple[list[int], list[int], list[int]]] = []  # (tokens, parents, depths)
        self.paths: list[tuple[int, list[int]]] = [(0, [])] * len(seqs)  # (row, node index per token)
        children: dict[tuple[int, int], int] = {}
        tokens: list[int] = []
        parents: list[int] = []
        depths: list[int] = []
        for i in sorted(range(len(seqs)), key=lambda j: seqs[j]):
            seq = seqs[i]
            if len(seq) < min_length:
                continue  # e.g. nothing to score: no forward pass needed
            node, k = -1, 0
            while k < len(seq) and (node, seq[k]) in children:
                node = children[(node, seq[k])]
                k += 1
            if tokens and len(tokens) + len(seq) - k > max_nodes:
                self.rows.append((tokens, parents, depths))
                children, tokens, parents, depths = {}, [], [], []
                node, k = -1, 0
            path = []
            node = -1
            for d, t in enumerate(seq):
                nxt = children.get((node, t))
                if nxt is None:
                    nxt = len(tokens)
                    children[(node, t)] = nxt
                    tokens.append(t)
                    parents.append(node)
                    depths.append(d)
                path.append(nxt)
                node = nxt
            self.paths[i] = (len(self.rows), path)
        if tokens:
            self.rows.append((tokens, parents, depths))

    def tensors(self, pad_id: int):
        """input ids, position ids and a boolean (rows, 1, width, width) ancestor mask."""
        import torch

        width = max(len(r[0]) for r in self.rows)
        n = len(self.rows)
        ids = np.full((n, width), pad_id, dtype=np.int64)
        pos = np.zeros((n, width), dtype=np.int64)
        mask = np.zeros((n, width, width), dtype=bool)
        idx = np.arange(width)
        mask[:, idx, idx] = True  # padding nodes see themselves only (no empty softmax rows)
        for r, (tokens, parents, depths) in enumerate(self.rows):
            ids[r, : len(tokens)] = tokens
            pos[r, : len(tokens)] = depths
            m = mask[r]
            for j, p in enumerate(parents):
                if p >= 0:
                    m[j, :j] = m[p, :j]  # a node's ancestors are its parent's plus the parent
        return torch.from_numpy(ids), torch.from_numpy(pos), torch.from_numpy(mask).unsqueeze(1), width
