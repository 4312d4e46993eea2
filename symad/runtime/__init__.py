"""Running compiled programs: one program's point and batch dispatch (``program``), the ``auto``
policy and its compile-cost model (``policy``), large batches split among threads (``batches``),
tiering from the first call to compiled code (``tiering``) and the compile threads (``background``)."""
