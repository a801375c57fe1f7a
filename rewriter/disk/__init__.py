"""The file system, safely: every write the tool makes (atomic replace, backups,
exclusive create, folders opened without following links) and the names it gives the
files it creates (one safe path segment, never one that is already there).
"""
