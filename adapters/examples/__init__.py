"""Opt-in examples.

The order tools (`tools`) over a SQLite orders database (`orders_db`), and the scripted chat models
used by the demo and tests (`models`).
"""
