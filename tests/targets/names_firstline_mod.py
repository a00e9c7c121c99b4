"""Imported by names_firstline.py; its frame is sampled at its first instruction."""
X = 1
