"""The ``symad`` command line: :mod:`symad.cli.main` builds the parser and runs a command;
one module per command; :mod:`symad.cli.common` has what they share."""
