"""The copy-and-patch tier's benchmark (issue 36): code generation, per-call speed, hot loops, time to solution."""
