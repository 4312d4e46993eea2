"""Running expressions: interpreted (``interpret``, ``tape``), compiled from one schedule
(``schedule``) to Python (``python_code``) or LLVM machine code (``llvm``), programs
(``program``), and tiering from the first call to compiled code (``tiering``, ``background``)."""
