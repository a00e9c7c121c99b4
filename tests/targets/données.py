# -*- coding: utf-8 -*-
"""A non-ASCII function in a non-ASCII file name, imported by shares.py."""


def calculé(n):
    total = 0
    for i in range(n): total += i % 3  # HOT:calculé
    return total
