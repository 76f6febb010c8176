"""The work of each `coevo` command, one module per command or command group (TRL's
trl/cli/commands/): coevo/cli.py declares the commands, their options and help; each body
calls a function here, which checks what only the command line can get wrong, calls the
library and prints. The library modules make the text and the numbers; the printing is here.

Top layer, with cli.py: nothing below imports these modules, and they never import cli.py.
"""
