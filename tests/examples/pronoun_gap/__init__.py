"""Pronoun gap: is "She is a nurse." likelier than "He is a nurse." across occupations?

The worked example of docs/architecture.md ("Add a method"): this folder and one registry
line in biaslens/registry.py give it `biaslens run`, `biaslens report`, a row on the bias card,
a section in `biaslens compare` and a column on the leaderboard.
"""
