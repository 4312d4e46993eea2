"""Native code: LLVM IR from a schedule (``ir``), compiled and loaded with llvmlite (``jit``),
and the optional on-disk cache of object code (``cache``)."""
