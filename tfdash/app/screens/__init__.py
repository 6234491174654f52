"""The dashboard's screens: main (the dashboard), drill (one kernel opened up), help (every key)."""
