"""Text in: the Lark grammar's parser, from infix text to postfix to nodes of a graph."""
