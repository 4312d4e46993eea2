"""Between differentiation and code: the schedule of a program's steps (``schedule``), lowered
to the primitive operations every backend runs (``lowering``), and cut into chunks when large."""
