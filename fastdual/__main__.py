import sys

from fastdual.cli import main

sys.exit(main())
