"""What users do with expressions besides computing them: explain the sweeps step by step
(``explanation``), draw them (``viz``), find where a value stops being finite (``diagnose``) and
export them as C or Python source (``exporters``).  Minimisation is :mod:`symad.optimize`."""
