"""Running compiled programs: one program's point and batch dispatch (``program``), the ``auto``
policy and its compile-cost model (``policy``), large batches split among threads (``batches``),
the blocks every loop over rows runs on, their threads and the canonical addition of their sums
(``blocks``), the loops' machine code (``native_loops``), tiering from the first call to
compiled code (``tiering``) and the compile threads (``background``)."""
