import sys

from transportlab.cli import main

sys.exit(main())
