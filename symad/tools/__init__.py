"""What users do with expressions: minimise them (``optimize``), explain the sweeps step by
step (``explain``), draw them (``viz``) and find where a value stops being finite (``diagnose``)."""
